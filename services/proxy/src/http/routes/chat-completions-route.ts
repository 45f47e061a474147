import type { Router } from '../router.ts';
import { parseChatRequest } from '../../domain/chat-request.ts';
import { buildChatCompletionBody, createChatStreamRenderer } from '../../domain/completion-response.ts';
import { completeChat } from '../../inference/complete-chat.ts';
import { streamChat } from '../../inference/stream-chat.ts';
import type { InferenceRouteKit } from '../route-kit.ts';

/**
 * `POST /v1/chat/completions`: OpenAI's chat completions, streamed or not, rendered from the
 * gateway's internal completion (the id `chatcmpl-<uuid>`, the slug as `model`, the billed
 * usage with its cost).
 */
export function mountChatCompletionsRoute(router: Router, kit: InferenceRouteKit): void {
  router.add('POST', '/v1/chat/completions', kit.inference('/v1/chat/completions', async (req, res, context, observer) => {
    const { snapshot, caller } = kit.identify(req, context);
    const json = await kit.readBodyWithinRateLimit(req, res, context, caller);
    const request = parseChatRequest(json, { maxMessageChars: kit.services.maxMessageChars });
    context.log.model = request.model;
    const model = kit.resolveModel(snapshot, caller, request.model, 'chat', observer, request.stream);
    const input = kit.chatInput(context, snapshot, caller, model, request, observer);
    const id = `chatcmpl-${context.requestUuid}`;
    if (!request.stream) {
      await completeChat(kit.inferenceDeps, input, (completed) => {
        kit.sendJson(res, buildChatCompletionBody({
          id, createdS: completed.createdS, modelSlug: model.slug, completion: completed.completion,
          billedUsage: completed.usage, costMicros: completed.costMicros, costByClass: completed.costByClass,
        }), observer);
      });
      return;
    }
    const renderer = createChatStreamRenderer({ id, createdS: Math.floor(Date.now() / 1000), modelSlug: model.slug, includeUsage: request.includeUsage });
    await kit.withStreamStop(res, (stop) => streamChat(kit.inferenceDeps, { ...input, sink: kit.sseSink(res, observer), renderer, stop }));
  }));
}
