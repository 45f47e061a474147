import type { ServerResponse } from 'node:http';
import { GatewayError } from '@gateway/errors';
import type { ConfigSnapshot, OrganisationEntry } from '../../domain/config-snapshot.ts';
import { attachEncryptedReasoning } from '../../domain/responses/responses-reasoning.ts';
import { parseResponsesRequest } from '../../domain/responses/responses-request.ts';
import { buildResponseBody, responseFrame, type ResponseFrame, type ResponseObject } from '../../domain/responses/responses-response.ts';
import { createResponsesStreamRenderer } from '../../domain/responses/responses-stream-renderer.ts';
import { readStatefulFields, resolveStatefulInput, storedInputItems } from '../../domain/responses/stateful-input.ts';
import type { StoredItem, StoredResponseRecord } from '../../domain/responses/stored-responses.ts';
import { completeChat } from '../../inference/complete-chat.ts';
import { streamChat, type StreamSink } from '../../inference/stream-chat.ts';
import type { InferenceRouteKit } from '../route-kit.ts';
import type { RequestContext } from '../request-context.ts';
import type { RouteHandler, Router, RoutedRequest } from '../router.ts';
import { sendError } from '../request-context.ts';

/** Most input items one input_items page lists (OpenAI's bound), and the default. */
const maxItemsPage = 100;
const defaultItemsPage = 20;

/** The 404 of a response id the organisation has no stored response under: unknown, another organisation's, deleted or expired alike. */
function responseNotFound(id: string): GatewayError {
  return new GatewayError('not_found', { publicMessage: `Response with id '${id.slice(0, 200)}' not found.` });
}

/**
 * `POST /v1/responses`: OpenAI's Responses API (docs/surfaces/responses.md). Stored state is read
 * first, before any Reserve: the response `previous_response_id` continues and the items
 * item_references name (a 503 when the store is down, so nothing is billed for it). The request
 * is then translated into the chat form, the continued conversation ahead of its input, and runs
 * the one billed chat pipeline (key, RPM, Reserve over the whole prompt, upstream through the
 * model's adapter, Settle, concealment), as chat completions do; the outcome is rendered as a
 * Response object or as Responses stream events, and stored (sealed per organisation) unless
 * `store` is false. A response that cannot be stored after it was billed is still returned:
 * `store: false` in its body (the stream's end has already said true: the log says it) and a warning.
 * `GET`/`DELETE /v1/responses/{id}` and `GET /v1/responses/{id}/input_items` read the store.
 */
export function mountResponsesRoute(router: Router, kit: InferenceRouteKit): void {
  const stored = kit.services.storedResponses;

  router.add('POST', '/v1/responses', kit.inference('/v1/responses', async (req, res, context, observer) => {
    const { snapshot, caller } = kit.identify(req, context);
    const json = await kit.readBodyWithinRateLimit(req, res, context, caller);
    const organisation = caller.organisation;
    const fields = readStatefulFields(json, organisation);
    const body = json as Record<string, unknown>;
    const resolved = organisation.responseStoreDisabled === true
      ? { input: body.input, priorItems: [] }
      : await resolveStatefulInput(body.input, fields, (responseId) => stored.load(snapshot, organisation, responseId));
    const parsed = parseResponsesRequest({ ...body, input: resolved.input }, { maxMessageChars: kit.services.maxMessageChars }, {
      store: fields.store, previousResponseId: fields.previousResponseId ?? null, priorItems: resolved.priorItems,
    });
    const request = parsed.chat;
    context.log.model = request.model;
    const model = kit.resolveModel(snapshot, caller, request.model, 'chat', observer, request.stream);
    const chatInput = kit.chatInput(context, snapshot, caller, model, request, observer);
    const seal = chatInput.toolCallIds.reasoning;
    const reasoning = { options: parsed.reasoningOutput, seal };
    const frameOf = (createdAtS: number) => responseFrame({
      requestUuid: context.requestUuid, createdAtS, modelSlug: model.slug, echoed: parsed.echoed, toolNames: parsed.toolNames, reasoning,
    });
    /** Stores the response (when asked); resolves whether it was stored, never rejects (the client gets its answer either way). */
    const keep = (frame: ResponseFrame, response: ResponseObject): Promise<boolean> => {
      if (!fields.store) return Promise.resolve(false);
      const inputItems = storedInputItems(resolved.input, frame.itemIdBase);
      const record: StoredResponseRecord = {
        storedAtMs: Date.now(), response: response as unknown as StoredResponseRecord['response'], inputItems,
        context: [...resolved.priorItems, ...inputItems, ...response.output],
      };
      return stored.save(snapshot, organisation, record).then(() => true, (error: unknown) => {
        kit.services.logger.warn({ requestId: context.requestId, err: { message: (error as Error)?.message } }, 'response billed and returned but not stored: the response store failed');
        return false;
      });
    };
    let kept: Promise<unknown> = Promise.resolve();
    try {
      // Earlier turns' reasoning (encrypted content the gateway sealed) goes back with its assistant messages.
      const input = { ...chatInput, request: attachEncryptedReasoning(request, parsed.encryptedReasoning, seal) };
      if (!request.stream) {
        await completeChat(kit.inferenceDeps, input, (completed) => {
          const frame = frameOf(completed.createdS);
          const response = buildResponseBody(frame, completed);
          kept = keep(frame, response).then((ok) => {
            if (!ok && fields.store) response.store = false;
            kit.sendJson(res, response, observer);
          });
        });
        await kept;
        return;
      }
      const frame = frameOf(Math.floor(Date.now() / 1000));
      let done: ResponseObject | undefined;
      const renderer = createResponsesStreamRenderer(frame, (response) => { done = response; });
      const sink = kit.sseSink(res, observer);
      // The stream's last frames wait for the store, so a client's next request (an item_reference
      // to this output, a previous_response_id) never arrives before the record exists.
      const storingSink: StreamSink = {
        ...sink,
        end(frames) {
          if (done === undefined || !fields.store) {
            sink.end(frames);
            return;
          }
          kept = keep(frame, done).then(() => sink.end(frames));
        },
      };
      await kit.withStreamStop(res, (stop) => streamChat(kit.inferenceDeps, { ...input, sink: storingSink, renderer, stop }));
      await kept;
    } catch (error) {
      // A refusal on the chat form (the estimate, an adapter) names the Responses parameter.
      throw parsed.translateError(error);
    }
  }));

  /** The organisation's stored record of `:id`, or the 404 every absent one gets. */
  const recordOf = async (req: RoutedRequest, res: ServerResponse, context: RequestContext): Promise<{ record: StoredResponseRecord; organisation: OrganisationEntry; snapshot: ConfigSnapshot }> => {
    const { snapshot, caller } = await kit.admit(req, res, context);
    const id = req.param;
    const record = await stored.load(snapshot, caller.organisation, id);
    if (record === undefined) throw responseNotFound(id);
    return { record, organisation: caller.organisation, snapshot };
  };

  router.add('GET', '/v1/responses/:id', kit.inference('/v1/responses/:id', async (req, res, context, observer) => {
    // A stream replay would change the answer's shape; it is not served, so it is refused rather than ignored.
    const { stream } = req.query();
    if (stream !== undefined && stream !== 'false') {
      throw new GatewayError('invalid_request', { param: 'stream', publicMessage: 'Streaming a stored response again is not supported by this gateway; omit stream.' });
    }
    const { record } = await recordOf(req, res, context);
    kit.sendJson(res, record.response, observer);
  }));

  router.add('DELETE', '/v1/responses/:id', kit.inference('/v1/responses/:id', async (req, res, context, observer) => {
    const { caller } = await kit.admit(req, res, context);
    const id = req.param;
    if (!await stored.remove(caller.organisation, id)) throw responseNotFound(id);
    kit.sendJson(res, { id, object: 'response', deleted: true }, observer);
  }));

  router.add('GET', '/v1/responses/:id/input_items', kit.inference('/v1/responses/:id/input_items', async (req, res, context, observer) => {
    const page = readItemsPage(req.query());
    const { record } = await recordOf(req, res, context);
    kit.sendJson(res, itemsPage(record.inputItems, page), observer);
  }));

  // Background responses are not run (docs/surfaces/responses.md), so none can be cancelled.
  const notCancellable: RouteHandler = (req, res, context) => {
    sendError(res, context, new GatewayError('not_found', {
      publicMessage: `Background responses are not run by this gateway, so ${req.method} ${req.path.slice(0, 200)} has nothing to cancel.`,
    }));
  };
  router.add('POST', '/v1/responses/:id/cancel', notCancellable);
}

/** An input_items page request: `limit` 1..100 (default 20), `order` asc|desc (default desc, newest first), `after`/`before` item ids. */
interface ItemsPageQuery {
  limit: number;
  order: 'asc' | 'desc';
  after: string | undefined;
  before: string | undefined;
}

function readItemsPage(query: Record<string, unknown>): ItemsPageQuery {
  const invalid = (param: string, message: string) => new GatewayError('invalid_request', { param, publicMessage: `Invalid ${param}: ${message}` });
  const text = (name: string): string | undefined => {
    const value = query[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'string') throw invalid(name, 'give it once, as a string');
    return value;
  };
  const limitText = text('limit');
  const limit = limitText === undefined ? defaultItemsPage : Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > maxItemsPage) throw invalid('limit', `must be an integer from 1 to ${maxItemsPage}`);
  const order = text('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw invalid('order', 'must be asc or desc');
  // include asks for extra item fields (e.g. logprobs) the gateway does not keep: refused rather than ignored.
  if (query.include !== undefined || query['include[]'] !== undefined) throw invalid('include', 'no additional item fields are available from this gateway');
  return { limit, order, after: text('after'), before: text('before') };
}

/** One page of a response's input items, OpenAI's list shape. */
function itemsPage(items: readonly StoredItem[], query: ItemsPageQuery): { object: 'list'; data: StoredItem[]; first_id: string | null; last_id: string | null; has_more: boolean } {
  let ordered = query.order === 'asc' ? [...items] : [...items].reverse();
  if (query.after !== undefined) {
    const at = ordered.findIndex((item) => item.id === query.after);
    ordered = at < 0 ? [] : ordered.slice(at + 1);
  }
  if (query.before !== undefined) {
    const at = ordered.findIndex((item) => item.id === query.before);
    ordered = at < 0 ? [] : ordered.slice(0, at);
  }
  const data = ordered.slice(0, query.limit);
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: ordered.length > data.length };
}
