import type { Express, RequestHandler } from 'express';
import { GatewayError } from '@gateway/errors';
import { attachEncryptedReasoning } from '../../domain/responses/responses-reasoning.ts';
import { parseResponsesRequest } from '../../domain/responses/responses-request.ts';
import { buildResponseBody, responseFrame } from '../../domain/responses/responses-response.ts';
import { createResponsesStreamRenderer } from '../../domain/responses/responses-stream-renderer.ts';
import { completeChat } from '../../inference/complete-chat.ts';
import { streamChat } from '../../inference/stream-chat.ts';
import type { InferenceRouteKit } from '../http-app.ts';
import { sendError } from '../request-context.ts';

/**
 * `POST /v1/responses`: OpenAI's Responses API, stateless core (docs/surfaces/responses.md). The
 * request is translated into the chat form and runs the one billed chat pipeline (key, RPM,
 * Reserve, upstream through the model's adapter, Settle, concealment), as chat completions do;
 * the outcome is rendered as a Response object (`resp_<uuid>`, the slug as `model`, the billed
 * usage with its cost) or as Responses stream events. A 400 the pipeline raises on the chat form
 * names the Responses parameter. Nothing is stored: `GET`/`DELETE /v1/responses/{id}` and its
 * `input_items` answer a 404 saying so.
 */
export function mountResponsesRoute(app: Express, kit: InferenceRouteKit): void {
  app.post('/v1/responses', kit.inference('/v1/responses', async (req, res, context, observer) => {
    const { snapshot, caller } = kit.identify(req, context);
    const json = await kit.readBodyWithinRateLimit(req, res, context, caller);
    const parsed = parseResponsesRequest(json, { maxMessageChars: kit.services.maxMessageChars });
    const request = parsed.chat;
    context.log.model = request.model;
    const model = kit.resolveModel(snapshot, caller, request.model, 'chat', observer, request.stream);
    const chatInput = kit.chatInput(context, snapshot, caller, model, request, observer);
    const seal = chatInput.toolCallIds.reasoning;
    const reasoning = { options: parsed.reasoningOutput, seal };
    const frameOf = (createdAtS: number) => responseFrame({ requestUuid: context.requestUuid, createdAtS, modelSlug: model.slug, echoed: parsed.echoed, reasoning });
    try {
      // Earlier turns' reasoning (encrypted content the gateway sealed) goes back with its assistant messages.
      const input = { ...chatInput, request: attachEncryptedReasoning(request, parsed.encryptedReasoning, seal) };
      if (!request.stream) {
        await completeChat(kit.inferenceDeps, input, (completed) => {
          kit.sendJson(res, buildResponseBody(frameOf(completed.createdS), completed), observer);
        });
        return;
      }
      const renderer = createResponsesStreamRenderer(frameOf(Math.floor(Date.now() / 1000)));
      await kit.withStreamStop(res, (stop) => streamChat(kit.inferenceDeps, { ...input, sink: kit.sseSink(res, observer), renderer, stop }));
    } catch (error) {
      // A refusal on the chat form (the estimate, an adapter) names the Responses parameter.
      throw parsed.translateError(error);
    }
  }));

  // Nothing is stored (docs/surfaces/responses.md), so there is nothing to fetch, delete, cancel
  // or list; the answer says so rather than a bare "unknown route". No key is needed to learn it.
  const notStored: RequestHandler = (req, res) => {
    sendError(res, new GatewayError('not_found', {
      publicMessage: `Responses are not stored by this gateway, so ${req.method} ${req.path.slice(0, 200)} has nothing to return; `
        + 'each POST /v1/responses answer is complete in itself (send the whole conversation as input).',
    }));
  };
  app.get('/v1/responses/:id', notStored);
  app.delete('/v1/responses/:id', notStored);
  app.get('/v1/responses/:id/input_items', notStored);
  app.post('/v1/responses/:id/cancel', notStored);
}
