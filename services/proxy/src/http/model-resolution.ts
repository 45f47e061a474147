import { GatewayError } from '@gateway/errors';
import type { AuthenticatedCaller } from '../domain/authenticate.ts';
import type { ConfigSnapshot, GatewayModelEntry, GatewayModelKind, OrganisationEntry } from '../domain/config-snapshot.ts';
import { resolveModelName } from '../domain/model-aliases.ts';
import type { RequestObserver } from '../telemetry/request-observer.ts';

/** The one 404 of a model that does not exist and of one the organisation may not use, so neither is told apart. */
function sameAnswerForMissingModel(slug: string): GatewayError {
  return new GatewayError('model_not_found', {
    param: 'model',
    publicMessage: `The model '${slug.slice(0, 256)}' does not exist or you do not have access to it.`,
  });
}

/** The model a caller asked for, when it exists and the organisation may use it; one 404 otherwise. */
export function modelAllowed(snapshot: ConfigSnapshot, organisation: OrganisationEntry, slug: string): GatewayModelEntry {
  const model = snapshot.modelsBySlug.get(slug);
  if (model === undefined || !organisation.allowedModelSlugs.has(slug)) throw sameAnswerForMissingModel(slug);
  return model;
}

/** The endpoints a model of a kind is served on, as /v1/models lists them and a wrong-kind 400 names them. */
export const endpointsOfKind: Record<GatewayModelKind, readonly string[]> = {
  chat: ['/v1/chat/completions', '/v1/responses', '/v1/messages'],
  embedding: ['/v1/embeddings'],
};

/** The gateway model of kind `kind` a request names: what InferenceRouteKit.resolveModel does. */
export function resolveModelOfKind(
  snapshot: ConfigSnapshot, caller: AuthenticatedCaller, name: string, kind: GatewayModelKind, observer: RequestObserver, stream: boolean,
): GatewayModelEntry {
  // A slug or an alias of one (domain/model-aliases.ts); from here on only the slug's model
  // counts: the allowed-models rule, prices, the Reserve, usage records and the response's `model`.
  const resolved = resolveModelName(snapshot, caller.organisation, name);
  // The label is the slug when the name reaches one (bounded by the catalogue), whatever the client sent otherwise.
  if (resolved !== undefined) observer.modelResolved(resolved.slug, stream);
  else observer.modelUnknown(stream);
  if (resolved === undefined || !caller.organisation.allowedModelSlugs.has(resolved.slug)) throw sameAnswerForMissingModel(name);
  const model = resolved;
  if (model.kind !== kind) {
    throw new GatewayError('invalid_request', {
      param: 'model',
      publicMessage: `The model '${model.slug}' is ${model.kind === 'embedding' ? 'an embedding' : 'a chat'} model; use POST ${endpointsOfKind[model.kind].join(' or POST ')}.`,
    });
  }
  return model;
}
