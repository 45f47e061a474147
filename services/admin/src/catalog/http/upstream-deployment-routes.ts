import { z } from 'zod';
import { camelKeys } from '../domain/camel-case.ts';
import type { UpstreamDeployment } from '../domain/upstream-deployment-store.ts';
import type { UpstreamUrlPolicy } from '../domain/upstream-url.ts';
import { createUpstreamDeploymentBody, updateUpstreamDeploymentBody, upstreamDeploymentResponse } from './catalog-schemas.ts';
import { gatewayModelSlug } from './gateway-model-schema.ts';
import { listJson } from '../../common/http/json-views.ts';
import { listQuery, pageSizes } from '../../common/http/request-schemas.ts';
import { listResponse } from '../../common/http/response-schemas.ts';
import { defineRoute, routeErrors, type AdminRoute } from '../../common/http/route-definition.ts';

/**
 * The upstream deployment routes (platform admins): further upstreams serving a gateway model
 * beside its own, for failover and load balancing by the proxies (docs/admin-api.md "Upstream
 * deployments"). Deployments are the platform's: no customer-facing answer ever names one.
 */

const tag = 'upstream deployments';
const platformErrors = routeErrors.platform;
const propagationNote = 'Returns after every connected proxy acknowledged the change (or with `x-config-propagation: pending`).';

/** Query of the list: the cursor paging of every list, and optionally one gateway model's deployments. */
const listDeploymentsQuery = listQuery.extend({
  after: listQuery.shape.after.meta({ description: 'Return the deployments after this one (its id).' }),
  gateway_model: gatewayModelSlug.optional().meta({ description: 'Only this gateway model\'s deployments (404 when no model has the slug).' }),
});

/** A deployment as its JSON shows it: money as decimal strings, the credential only as has_api_key. */
function upstreamDeploymentJson(deployment: UpstreamDeployment): z.output<typeof upstreamDeploymentResponse> {
  const money = (value: bigint) => value.toString();
  return {
    id: deployment.id, gateway_model: deployment.gatewayModel, name: deployment.name, priority: deployment.priority, weight: deployment.weight,
    upstream: {
      provider_kind: deployment.upstream.providerKind, base_url: deployment.upstream.baseUrl, model: deployment.upstream.model,
      has_api_key: deployment.upstream.hasApiKey, allow_private_network: deployment.upstream.allowPrivateNetwork,
    },
    provider_input_cost_micros_per_mtok: money(deployment.providerInputCostMicrosPerMtok),
    provider_output_cost_micros_per_mtok: money(deployment.providerOutputCostMicrosPerMtok),
    provider_cached_input_cost_micros_per_mtok: money(deployment.providerCachedInputCostMicrosPerMtok),
    provider_cache_write_5m_cost_micros_per_mtok: money(deployment.providerCacheWrite5mCostMicrosPerMtok),
    provider_cache_write_1h_cost_micros_per_mtok: money(deployment.providerCacheWrite1hCostMicrosPerMtok),
    provider_reasoning_cost_micros_per_mtok: deployment.providerReasoningCostMicrosPerMtok === null ? null : money(deployment.providerReasoningCostMicrosPerMtok),
    provider_audio_input_cost_micros_per_mtok: money(deployment.providerAudioInputCostMicrosPerMtok),
    provider_image_input_cost_micros_per_mtok: money(deployment.providerImageInputCostMicrosPerMtok),
    created_at: deployment.createdAt.toISOString(),
    updated_at: deployment.updatedAt.toISOString(),
  };
}

/** The upstream deployment routes. The SSRF policy shapes the bodies' validation of base URLs. */
export function upstreamDeploymentRoutes(policy: UpstreamUrlPolicy): AdminRoute[] {
  return [
    defineRoute({
      method: 'post', path: '/admin/v1/upstream-deployments', operationId: 'createUpstreamDeployment', tag, authenticated: true, access: 'platform',
      summary: 'Add an upstream deployment to a gateway model (the credential is encrypted at rest and never returned).',
      description: `At most 16 deployments per model, its own upstream ("primary") included. Refused: an existing name for the model or "primary", or a 16th further deployment (409); an unknown gateway model (404); a base URL the SSRF rule refuses, or a provider kind that cannot serve the model as configured (400). ${propagationNote}`,
      body: createUpstreamDeploymentBody(policy), changesConfig: true,
      success: { status: 201, description: 'The deployment.', schema: upstreamDeploymentResponse },
      errors: [...routeErrors.write, 'not_found', 'conflict', ...platformErrors],
      async handle({ service }, { actor, body }) {
        const { deployment, propagation } = await service.catalog.createUpstreamDeployment(actor, camelKeys(body));
        return { status: 201, body: upstreamDeploymentJson(deployment), propagation };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/upstream-deployments', operationId: 'listUpstreamDeployments', tag, authenticated: true, access: 'platform',
      summary: 'List upstream deployments by gateway model and name (cursor paging: `after` is an id), optionally one model\'s. The model\'s own upstream is not listed: it is the model\'s `upstream`.',
      query: listDeploymentsQuery,
      success: { status: 200, description: 'A page of deployments.', schema: listResponse(upstreamDeploymentResponse) },
      errors: ['unauthenticated', 'invalid_request', 'not_found', ...platformErrors],
      async handle({ service }, { actor, query }) {
        const page = await service.catalog.listUpstreamDeployments(
          actor, { gatewayModel: query.gateway_model }, { limit: query.limit ?? pageSizes.default, after: query.after },
        );
        return { status: 200, body: listJson(page, upstreamDeploymentJson) };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/upstream-deployments/{id}', operationId: 'getUpstreamDeployment', tag, authenticated: true, access: 'platform',
      summary: 'Get an upstream deployment.',
      success: { status: 200, description: 'The deployment.', schema: upstreamDeploymentResponse },
      errors: ['unauthenticated', 'not_found', ...platformErrors],
      async handle({ service }, { actor, params }) {
        return { status: 200, body: upstreamDeploymentJson(await service.catalog.getUpstreamDeployment(actor, params.id!)) };
      },
    }),
    defineRoute({
      method: 'patch', path: '/admin/v1/upstream-deployments/{id}', operationId: 'updateUpstreamDeployment', tag, authenticated: true, access: 'platform',
      summary: 'Change an upstream deployment: priority, weight, base URL, upstream model, credential, SSRF exception or provider costs (not its name, model or provider kind).',
      description: `\`upstream.api_key\` replaces the credential (encrypted at rest, never returned); null removes it. Turning \`upstream.allow_private_network\` off is refused (400) while the base URL needs it. ${propagationNote}`,
      body: updateUpstreamDeploymentBody(policy), changesConfig: true,
      success: { status: 200, description: 'The deployment after the change.', schema: upstreamDeploymentResponse },
      errors: [...routeErrors.write, 'not_found', ...platformErrors],
      async handle({ service }, { actor, params, body }) {
        const { deployment, propagation } = await service.catalog.updateUpstreamDeployment(actor, params.id!, camelKeys(body));
        return { status: 200, body: upstreamDeploymentJson(deployment), propagation };
      },
    }),
    defineRoute({
      method: 'delete', path: '/admin/v1/upstream-deployments/{id}', operationId: 'deleteUpstreamDeployment', tag, authenticated: true, access: 'platform',
      summary: 'Delete an upstream deployment; proxies stop sending requests to it.',
      description: propagationNote,
      changesConfig: true,
      success: {
        status: 200, description: 'Deleted.',
        schema: z.strictObject({ object: z.literal('upstream_deployment'), id: upstreamDeploymentResponse.shape.id, deleted: z.literal(true) }),
      },
      errors: ['unauthenticated', 'not_found', ...platformErrors],
      async handle({ service }, { actor, params }) {
        const propagation = await service.catalog.deleteUpstreamDeployment(actor, params.id!);
        return { status: 200, body: { object: 'upstream_deployment', id: params.id!, deleted: true }, propagation };
      },
    }),
  ];
}
