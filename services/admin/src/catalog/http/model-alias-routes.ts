import { z } from 'zod';
import { gatewayModelSlug } from './gateway-model-schema.ts';
import type { ModelAlias } from '../domain/model-alias-store.ts';
import { timestampShown } from '../../common/http/wire-fields.ts';
import { defineRoute, routeErrors, type AdminRoute } from '../../common/http/route-definition.ts';

/**
 * The model alias routes of the admin API: platform-wide aliases (platform admins set them,
 * anyone signed in reads them) and each organisation's own (its owners set them, its members
 * read them). Aliases let a client's built-in model names reach a gateway model
 * (docs/model-aliases.md).
 */

/** Body of the alias PUTs: the gateway model the alias reaches. */
const putModelAliasBody = z.strictObject({
  gateway_model: gatewayModelSlug.meta({ description: 'Slug of the gateway model the alias reaches.', examples: ['acme-chat'] }),
});

/** One alias as the API shows it. */
const modelAliasResponse = z.strictObject({
  object: z.literal('model_alias'),
  alias: z.string().meta({ description: 'The name a client may send as `model`.', examples: ['claude-sonnet-4-5-20250929'] }),
  gateway_model: z.string().meta({ description: 'Slug of the gateway model it reaches.' }),
  created_at: timestampShown,
  updated_at: timestampShown,
});

const modelAliasListResponse = z.strictObject({ object: z.literal('list'), data: z.array(modelAliasResponse) });
const modelAliasDeletedResponse = z.strictObject({ object: z.literal('model_alias'), alias: z.string(), deleted: z.literal(true) });

function modelAliasJson(alias: ModelAlias) {
  return {
    object: 'model_alias' as const, alias: alias.alias, gateway_model: alias.gatewayModelSlug,
    created_at: alias.createdAt.toISOString(), updated_at: alias.updatedAt.toISOString(),
  };
}

const tag = 'model aliases';
const putDescription = 'Creates the alias or retargets it (201 when created, 200 when it existed). Refused: an alias that is a gateway model\'s slug (409, `param: alias`), a name outside the alias rule (400, `alias`), a target that is no gateway model (400, `gateway_model`). Returns after every connected proxy acknowledged the change (or with `x-config-propagation: pending`). An alias name may contain "/" (sent as is or percent-encoded).';

/** The model alias routes. */
export function modelAliasRoutes(): AdminRoute[] {
  return [
    defineRoute({
      method: 'get', path: '/admin/v1/model-aliases', operationId: 'listPlatformModelAliases', tag, authenticated: true, access: 'organisation',
      summary: 'Every platform-wide model alias, by name (any signed-in caller: names and slugs only).',
      success: { status: 200, description: 'The platform aliases.', schema: modelAliasListResponse },
      errors: ['unauthenticated'],
      async handle({ service }, { actor }) {
        const aliases = await service.catalog.listPlatformModelAliases(actor);
        return { status: 200, body: { object: 'list', data: aliases.map(modelAliasJson) } };
      },
    }),
    defineRoute({
      method: 'put', path: '/admin/v1/model-aliases/{alias}', expressPath: '/admin/v1/model-aliases/*alias',
      operationId: 'putPlatformModelAlias', tag, authenticated: true, access: 'platform',
      summary: 'Set a platform-wide model alias (platform admins).',
      description: `${putDescription} Organisations may override it with an alias of their own of the same name.`,
      body: putModelAliasBody, changesConfig: true,
      success: { status: 200, description: 'The alias after the change.', schema: modelAliasResponse },
      alsoSucceeds: [{ status: 201, description: 'The alias was created.' }],
      errors: [...routeErrors.write, 'conflict', ...routeErrors.platform],
      async handle({ service }, { actor, params, body }) {
        const { alias, created, propagation } = await service.catalog.putPlatformModelAlias(actor, params.alias!, body.gateway_model);
        return { status: created ? 201 : 200, body: modelAliasJson(alias), propagation };
      },
    }),
    defineRoute({
      method: 'delete', path: '/admin/v1/model-aliases/{alias}', expressPath: '/admin/v1/model-aliases/*alias',
      operationId: 'deletePlatformModelAlias', tag, authenticated: true, access: 'platform',
      summary: 'Delete a platform-wide model alias (platform admins); the name then answers 404 on every surface unless an organisation has its own.',
      changesConfig: true,
      success: { status: 200, description: 'Deleted.', schema: modelAliasDeletedResponse },
      errors: ['unauthenticated', 'not_found', ...routeErrors.platform],
      async handle({ service }, { actor, params }) {
        const propagation = await service.catalog.deletePlatformModelAlias(actor, params.alias!);
        return { status: 200, body: { object: 'model_alias', alias: params.alias!, deleted: true }, propagation };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}/model-aliases', operationId: 'listOrganisationModelAliases', tag,
      authenticated: true, access: 'organisation', role: 'viewer', scope: 'organisation',
      summary: 'The organisation\'s own model aliases, by name (they override platform aliases of the same name).',
      success: { status: 200, description: 'The organisation\'s aliases.', schema: modelAliasListResponse },
      errors: ['unauthenticated', 'not_found'],
      async handle({ service }, { actor, params }) {
        const aliases = await service.catalog.listOrganisationModelAliases(actor, params.id!);
        return { status: 200, body: { object: 'list', data: aliases.map(modelAliasJson) } };
      },
    }),
    defineRoute({
      method: 'put', path: '/admin/v1/organisations/{id}/model-aliases/{alias}', expressPath: '/admin/v1/organisations/:id/model-aliases/*alias',
      operationId: 'putOrganisationModelAlias', tag, authenticated: true, access: 'organisation', role: 'owner', scope: 'organisation',
      summary: 'Set one of the organisation\'s own model aliases (owners).',
      description: `${putDescription} Also refused (400, \`gateway_model\`): a target outside the organisation's allowed gateway models, and, for an alias overriding a platform alias, a target of another kind (chat/embedding) than the platform alias's.`,
      body: putModelAliasBody, changesConfig: true,
      success: { status: 200, description: 'The alias after the change.', schema: modelAliasResponse },
      alsoSucceeds: [{ status: 201, description: 'The alias was created.' }],
      errors: [...routeErrors.write, 'not_found', 'conflict'],
      async handle({ service }, { actor, params, body }) {
        const { alias, created, propagation } = await service.catalog.putOrganisationModelAlias(actor, params.id!, params.alias!, body.gateway_model);
        return { status: created ? 201 : 200, body: modelAliasJson(alias), propagation };
      },
    }),
    defineRoute({
      method: 'delete', path: '/admin/v1/organisations/{id}/model-aliases/{alias}', expressPath: '/admin/v1/organisations/:id/model-aliases/*alias',
      operationId: 'deleteOrganisationModelAlias', tag, authenticated: true, access: 'organisation', role: 'owner', scope: 'organisation',
      summary: 'Delete one of the organisation\'s own model aliases (owners); a platform alias of the same name applies again.',
      changesConfig: true,
      success: { status: 200, description: 'Deleted.', schema: modelAliasDeletedResponse },
      errors: ['unauthenticated', 'not_found', 'permission_denied'],
      async handle({ service }, { actor, params }) {
        const propagation = await service.catalog.deleteOrganisationModelAlias(actor, params.id!, params.alias!);
        return { status: 200, body: { object: 'model_alias', alias: params.alias!, deleted: true }, propagation };
      },
    }),
  ];
}
