import { camelKeys } from '../domain/camel-case.ts';
import type { UpstreamUrlPolicy } from '../domain/upstream-url.ts';
import { createGatewayModelBody, gatewayModelResponse, updateGatewayModelBody } from './catalog-schemas.ts';
import { gatewayModelJson } from './catalog-views.ts';
import { listJson } from '../../common/http/json-views.ts';
import { listQuery, pageSizes } from '../../common/http/request-schemas.ts';
import { listResponse } from '../../common/http/response-schemas.ts';
import { defineRoute, routeErrors, type AdminRoute } from '../../common/http/route-definition.ts';

const platformErrors = routeErrors.platform;
const writeErrors = routeErrors.write;

/** The gateway model routes. The SSRF policy shapes the bodies' validation of base URLs. */
export function gatewayModelRoutes(policy: UpstreamUrlPolicy): AdminRoute[] {
  return [
    defineRoute({
      method: 'post', path: '/admin/v1/gateway-models', operationId: 'createGatewayModel', tag: 'gateway models', authenticated: true, access: 'platform',
      summary: 'Create a gateway model (the upstream credential is encrypted at rest and never returned).',
      body: createGatewayModelBody(policy), changesConfig: true,
      success: { status: 201, description: 'The gateway model.', schema: gatewayModelResponse },
      errors: [...writeErrors, 'conflict', ...platformErrors],
      async handle({ service }, { actor, body }) {
        // The body's fields are the record's, camelCased: nothing to map field by field.
        const { gatewayModel, propagation } = await service.catalog.createGatewayModel(actor, camelKeys(body));
        return { status: 201, body: gatewayModelJson(gatewayModel), propagation };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/gateway-models', operationId: 'listGatewayModels', tag: 'gateway models', authenticated: true, access: 'platform',
      summary: 'List gateway models by slug (cursor paging: `after` is a slug).',
      query: listQuery,
      success: { status: 200, description: 'A page of gateway models.', schema: listResponse(gatewayModelResponse) },
      errors: ['unauthenticated', 'invalid_request', ...platformErrors],
      async handle({ service }, { actor, query }) {
        const page = await service.catalog.listGatewayModels(actor, { limit: query.limit ?? pageSizes.default, after: query.after });
        return { status: 200, body: listJson(page, gatewayModelJson) };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/gateway-models/{slug}', expressPath: '/admin/v1/gateway-models/*slug',
      operationId: 'getGatewayModel', tag: 'gateway models', authenticated: true, access: 'platform',
      summary: 'Get a gateway model. A slug containing "/" may be sent as is or percent-encoded.',
      success: { status: 200, description: 'The gateway model.', schema: gatewayModelResponse },
      errors: ['unauthenticated', 'not_found', ...platformErrors],
      async handle({ service }, { actor, params }) {
        return { status: 200, body: gatewayModelJson(await service.catalog.getGatewayModel(actor, params.slug!)) };
      },
    }),
    defineRoute({
      method: 'patch', path: '/admin/v1/gateway-models/{slug}', expressPath: '/admin/v1/gateway-models/*slug',
      operationId: 'updateGatewayModel', tag: 'gateway models', authenticated: true, access: 'platform',
      summary: 'Change a gateway model: display name, limits, prices, upstream target or credential.',
      description: 'Returns after every connected proxy acknowledged the change (or with `x-config-propagation: pending`). `upstream.api_key` replaces the credential (encrypted at rest, never returned); null removes it. `upstream.allow_private_network` sets or clears the model\'s explicit SSRF exception (audited); turning it off is refused (400) while the base URL needs it.',
      body: updateGatewayModelBody(policy), changesConfig: true,
      success: { status: 200, description: 'The gateway model after the change.', schema: gatewayModelResponse },
      errors: [...writeErrors, 'not_found', ...platformErrors],
      async handle({ service }, { actor, params, body }) {
        const { gatewayModel, propagation } = await service.catalog.updateGatewayModel(actor, params.slug!, camelKeys(body));
        return { status: 200, body: gatewayModelJson(gatewayModel), propagation };
      },
    }),
  ];
}
