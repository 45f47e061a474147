import type { ServerResponse } from 'node:http';
import { GatewayError } from '@gateway/errors';
import { checkMediaParts } from '../../domain/chat-request.ts';
import { messageIdOf, buildMessagesBody } from '../../domain/messages/messages-response.ts';
import { parseMessagesRequest } from '../../domain/messages/messages-request.ts';
import { createMessagesStreamRenderer } from '../../domain/messages/messages-stream-renderer.ts';
import { MediaTokenCounter } from '../../domain/media-tokens.ts';
import { estimatePromptTokens } from '../../domain/token-estimate.ts';
import { completeChat } from '../../inference/complete-chat.ts';
import { streamChat } from '../../inference/stream-chat.ts';
import type { RequestContext } from '../request-context.ts';
import type { Router, RoutedRequest } from '../router.ts';
import type { InferenceRouteKit } from '../route-kit.ts';

/**
 * The 401 of a request with no key at all, naming Anthropic's header first: Anthropic's clients
 * (and Claude Code) send `x-api-key`, and the generic answer names only `Authorization`.
 */
function refuseMissingKey(req: RoutedRequest): void {
  if (req.headers.authorization === undefined && req.headers['x-api-key'] === undefined) {
    throw new GatewayError('invalid_api_key', {
      publicMessage: 'Missing API key. Send it in the "x-api-key" header (or as "Authorization: Bearer <key>").',
    });
  }
}

/** Snapshot, key (x-api-key or Bearer), RPM and body: the start both Messages routes share. */
async function admitMessagesCall(kit: InferenceRouteKit, req: RoutedRequest, res: ServerResponse, context: RequestContext) {
  refuseMissingKey(req);
  const { snapshot, caller } = kit.identify(req, context, 'bearer_or_x_api_key');
  const json = await kit.readBodyWithinRateLimit(req, res, context, caller);
  return { snapshot, caller, json };
}

/**
 * `POST /v1/messages`: Anthropic's Messages API, streamed or not, for every gateway chat model.
 * The body is translated into the internal chat request and runs the one billed pipeline
 * (Reserve, upstream through the model's own adapter, Settle), so an OpenAI-compatible model and
 * an Anthropic one are served alike; the answer is rendered in Anthropic's shapes with the
 * gateway's id (`msg_…`), the slug as `model` and the billed usage with its cost. Errors are in
 * Anthropic's error shape; a refusal raised on the internal request names the Messages field. `anthropic-version` and `anthropic-beta` are not read: the answer is
 * the 2023-06-01 shape every version shares.
 *
 * `POST /v1/messages/count_tokens`: the gateway's estimate of the translated request's prompt
 * (what a Reserve is sized on, images at the most the model's family bills), after the same key,
 * RPM, model and media checks; no Reserve, no upstream.
 */
export function mountMessagesRoute(router: Router, kit: InferenceRouteKit): void {
  const limits = { maxMessageChars: kit.services.maxMessageChars };

  router.add('POST', '/v1/messages', kit.inference('/v1/messages', async (req, res, context, observer) => {
    const { snapshot, caller, json } = await admitMessagesCall(kit, req, res, context);
    const parsed = parseMessagesRequest(json, 'create', limits);
    const request = parsed.chat;
    context.log.model = request.model;
    const model = kit.resolveModel(snapshot, caller, request.model, 'chat', observer, request.stream);
    const input = kit.chatInput(context, snapshot, caller, model, request, observer);
    const id = messageIdOf(context.requestUuid);
    // `thinking.display: "omitted"`: thinking blocks come back without their text, as Anthropic does.
    // An Anthropic upstream is sent the display itself (its signature then carries the thinking, so
    // the gateway must not blank a text it signed); other upstreams' reasoning is blanked here.
    const thinking = request.reasoning?.thinking;
    const thinkingOmitted = thinking !== undefined && thinking.type !== 'disabled' && thinking.display === 'omitted'
      && model.upstream.providerKind !== 'anthropic';
    try {
      if (!request.stream) {
        await completeChat(kit.inferenceDeps, input, (completed) => {
          kit.sendJson(res, buildMessagesBody({
            id, modelSlug: model.slug, completion: completed.completion, billedUsage: completed.usage, costMicros: completed.costMicros,
            costByClass: completed.costByClass, thinkingOmitted,
          }), observer);
        });
        return;
      }
      const renderer = createMessagesStreamRenderer({ id, modelSlug: model.slug, thinkingOmitted });
      await kit.withStreamStop(res, (stop) => streamChat(kit.inferenceDeps, { ...input, sink: kit.sseSink(res, observer), renderer, stop }));
    } catch (error) {
      // A refusal on the internal request (media, a tool-call id, the context, an adapter) names the Messages field.
      throw parsed.translateError(error);
    }
  }, 'anthropic'));

  router.add('POST', '/v1/messages/count_tokens', kit.inference('/v1/messages/count_tokens', async (req, res, context, observer) => {
    const { snapshot, caller, json } = await admitMessagesCall(kit, req, res, context);
    const parsed = parseMessagesRequest(json, 'count_tokens', limits);
    const request = parsed.chat;
    context.log.model = request.model;
    const model = kit.resolveModel(snapshot, caller, request.model, 'chat', observer, false);
    // The same media checks and counter as planChat, so the count is what the Reserve would count
    // (the most the model's family can bill for each image), and an image for a text-only model is
    // the same 400, naming the Messages field.
    let media: MediaTokenCounter | undefined;
    try {
      media = checkMediaParts(request, model) === 0 ? undefined : new MediaTokenCounter(model.upstream.model);
    } catch (error) {
      throw parsed.translateError(error);
    }
    kit.sendJson(res, { input_tokens: estimatePromptTokens(request, model.tokenizer, media) }, observer);
  }, 'anthropic'));
}
