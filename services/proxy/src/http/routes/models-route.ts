import type { Router } from '../router.ts';
import type { GatewayModelEntry, GatewayModelKind } from '../../domain/config-snapshot.ts';
import type { InferenceRouteKit } from '../route-kit.ts';
import { endpointsOfKind, modelAllowed } from '../model-resolution.ts';

/** A model as /v1/models shows it: OpenAI's fields (the slug and nothing upstream) plus what the model serves and accepts. */
interface ModelObject {
  id: string;
  object: 'model';
  created: number;
  owned_by: 'gateway';
  capabilities: { kind: GatewayModelKind; endpoints: readonly string[]; input_modalities: string[] };
}

function modelObject(model: GatewayModelEntry): ModelObject {
  return {
    id: model.slug, object: 'model', created: model.createdAtS, owned_by: 'gateway',
    capabilities: {
      kind: model.kind,
      endpoints: endpointsOfKind[model.kind],
      input_modalities: ['text', ...[...model.mediaModalities].sort()],
    },
  };
}

/**
 * `GET /v1/models` and `GET /v1/models/{slug}`: the models the caller's organisation may use, after
 * the key and RPM checks. The slug is the rest of the path, decoded (so it may hold a `/`).
 */
export function mountModelsRoutes(router: Router, kit: InferenceRouteKit): void {
  router.add('GET', '/v1/models', kit.inference('/v1/models', async (req, res, context) => {
    const { snapshot, caller } = await kit.admit(req, res, context);
    const data = [...caller.organisation.allowedModelSlugs]
      .map((slug) => snapshot.modelsBySlug.get(slug))
      .filter((model): model is GatewayModelEntry => model !== undefined)
      .sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0))
      .map(modelObject);
    kit.sendExpressJson(req, res, { object: 'list', data });
  }));

  router.add('GET', '/v1/models/*slug', kit.inference('/v1/models/:slug', async (req, res, context) => {
    const { snapshot, caller } = await kit.admit(req, res, context);
    kit.sendExpressJson(req, res, modelObject(modelAllowed(snapshot, caller.organisation, req.param)));
  }));
}
