import { z } from 'zod';
import { camelKeys } from '../../catalog/domain/gateway-model-schema.ts';
import type { UpstreamUrlPolicy } from '../../catalog/domain/upstream-url.ts';
import {
  adminTokenJson, auditEventJson, balanceJson, creditJson, gatewayModelJson, listJson, organisationJson, projectBudgetJson, projectJson,
  usageRecordJson, usageSummaryRowJson,
} from './json-views.ts';
import {
  auditEventsQuery, createCreditBody, createGatewayModelBody, createOrganisationBody, createProjectBody, responseStorageBody, createTokenBody, listQuery,
  pageSizes, projectBudgetBody, updateGatewayModelBody, updateOrganisationBody, updateProjectBody, usageQuery, usageSummaryQuery,
} from './request-schemas.ts';
import {
  adminTokenCreatedResponse, adminTokenResponse, auditEventResponse, balanceResponse, creditResponse, gatewayModelResponse,
  healthResponse, listResponse, organisationResponse, projectBudgetResponse, projectCreatedResponse, projectResponse,
  usageListResponse, usageSummaryResponse,
} from './response-schemas.ts';
import { defineRoute, routeErrors, type AdminRoute } from './route-definition.ts';
import { alertRoutes } from '../../alerts/http/alert-routes.ts';
import { modelAliasRoutes } from '../../catalog/http/model-alias-routes.ts';
import { analyticsRoutes } from '../../platform/http/analytics-routes.ts';
import { peopleRoutes } from '../../people/http/people-routes.ts';
import { billingRoutes } from '../../billing/http/billing-routes.ts';
import { invoiceRoutes } from '../../invoicing/http/invoice-routes.ts';
import { paymentReversalRoutes } from '../../billing/http/payment-reversal-routes.ts';
import { refundRoutes } from '../../billing/http/refund-routes.ts';

const readErrors = routeErrors.read;
const platformErrors = routeErrors.platform;
const writeErrors = routeErrors.write;
const ledgerErrors = routeErrors.ledger;

/** The admin API's routes. The SSRF policy shapes the gateway-model body's validation. */
export function createAdminRoutes(policy: UpstreamUrlPolicy): AdminRoute[] {
  return [
    {
      method: 'get', path: '/healthz', operationId: 'getHealth', tag: 'system', authenticated: false, access: 'public',
      summary: 'Liveness: the process is running.',
      success: { status: 200, description: 'Always {"status":"ok"} while the process runs.', schema: healthResponse },
      errors: [],
      probe: 'liveness',
    },
    {
      method: 'get', path: '/readyz', operationId: 'getReadiness', tag: 'system', authenticated: false, access: 'public',
      summary: 'Readiness: the database is migrated and the config stream is listening.',
      success: { status: 200, description: '{"status":"ready"}; 503 with {"status":"not_ready"} otherwise.', schema: healthResponse },
      alsoSucceeds: [{ status: 503, description: 'Not ready (starting or shutting down).' }],
      errors: [],
      probe: 'readiness',
    },
    defineRoute({
      method: 'get', path: '/admin/v1/openapi.json', operationId: 'getOpenApiDocument', tag: 'system', authenticated: false, access: 'public',
      summary: 'This OpenAPI 3.1 document (no token needed: it is public in the repository too).',
      success: { status: 200, description: 'The OpenAPI document.', schema: z.object({}).loose() },
      errors: [],
      handle: async (context) => ({ status: 200, body: context.openApiDocument() }),
    }),

    defineRoute({
      method: 'post', path: '/admin/v1/organisations', operationId: 'createOrganisation', tag: 'organisations', authenticated: true, access: 'platform',
      summary: 'Create an organisation (and open its ledger account).',
      body: createOrganisationBody, changesConfig: true,
      success: { status: 201, description: 'The organisation.', schema: organisationResponse },
      errors: [...writeErrors, ...ledgerErrors, ...platformErrors],
      async handle({ service }, { actor, body }) {
        const { organisation, propagation } = await service.tenancy.createOrganisation(actor, {
          name: body.name,
          billingMode: body.billing_mode ?? 'commercial',
          rpmLimit: body.rpm_limit ?? 600,
          allowedGatewayModels: body.allowed_gateway_models ?? [],
        });
        return { status: 201, body: organisationJson(organisation), propagation };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/organisations', operationId: 'listOrganisations', tag: 'organisations', authenticated: true, access: 'organisation',
      summary: 'List organisations in creation order (cursor paging).',
      query: listQuery,
      success: { status: 200, description: 'A page of organisations.', schema: listResponse(organisationResponse) },
      errors: ['unauthenticated', 'invalid_request'],
      async handle({ service }, { actor, query }) {
        const page = await service.tenancy.listOrganisations(actor, { limit: query.limit ?? pageSizes.default, after: query.after });
        return { status: 200, body: listJson(page, organisationJson) };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}', operationId: 'getOrganisation', tag: 'organisations', authenticated: true, access: 'organisation', role: 'viewer', scope: 'organisation',
      summary: 'Get an organisation.',
      success: { status: 200, description: 'The organisation.', schema: organisationResponse },
      errors: ['unauthenticated', 'not_found'],
      async handle({ service }, { actor, params }) {
        return { status: 200, body: organisationJson(await service.tenancy.getOrganisation(actor, params.id!)) };
      },
    }),
    defineRoute({
      method: 'patch', path: '/admin/v1/organisations/{id}', operationId: 'updateOrganisation', tag: 'organisations', authenticated: true, access: 'platform', scope: 'organisation',
      summary: 'Change an organisation (suspend, billing mode, RPM, allowed models).',
      description: 'Returns after every connected proxy acknowledged the change (a suspension is a hard cutover), or after SNAPSHOT_ACK_TIMEOUT_MS with `x-config-propagation: pending`.',
      body: updateOrganisationBody, changesConfig: true,
      success: { status: 200, description: 'The organisation after the change.', schema: organisationResponse },
      errors: [...writeErrors, 'not_found', ...platformErrors],
      async handle({ service }, { actor, params, body }) {
        const { organisation, propagation } = await service.tenancy.updateOrganisation(actor, params.id!, {
          name: body.name,
          status: body.status,
          billingMode: body.billing_mode,
          rpmLimit: body.rpm_limit,
          allowedGatewayModels: body.allowed_gateway_models,
        });
        return { status: 200, body: organisationJson(organisation), propagation };
      },
    }),
    defineRoute({
      method: 'put', path: '/admin/v1/organisations/{id}/response-storage', operationId: 'setResponseStorage', tag: 'organisations',
      authenticated: true, access: 'organisation', role: 'owner', scope: 'organisation',
      summary: 'Set how the organisation\'s Responses are stored: on or off, and a retention of its own.',
      description: 'Stored Responses (POST /v1/responses with store: true, the default) are sealed per organisation and kept for the platform\'s retention (ADMIN_RESPONSE_RETENTION_S) or this shorter one; those already stored follow a shortened retention too. Returns after every connected proxy acknowledged the change, or after SNAPSHOT_ACK_TIMEOUT_MS with `x-config-propagation: pending`.',
      body: responseStorageBody, changesConfig: true,
      success: { status: 200, description: 'The organisation after the change.', schema: organisationResponse },
      errors: [...writeErrors, 'not_found', 'permission_denied'],
      async handle({ service }, { actor, params, body }) {
        const { organisation, propagation } = await service.tenancy.setResponseStorage(actor, params.id!, {
          storeResponses: body.store_responses, responseRetentionS: body.response_retention_s,
        });
        return { status: 200, body: organisationJson(organisation), propagation };
      },
    }),
    defineRoute({
      method: 'post', path: '/admin/v1/organisations/{id}/credits', operationId: 'creditOrganisation', tag: 'balance', authenticated: true, access: 'platform', scope: 'organisation',
      summary: 'Credit the organisation balance (idempotent per Idempotency-Key).',
      description: 'The ledger credit id is `manual:<organisation id>:<Idempotency-Key>`. The first successful call answers 201; a replay with the same key and body answers 200 with the same body and `Idempotent-Replayed: true`; the same key with a different body answers 409 idempotency_conflict.',
      body: createCreditBody, idempotencyKey: true,
      success: { status: 201, description: 'Credited.', schema: creditResponse },
      alsoSucceeds: [{ status: 200, description: 'A replay: the first call\'s result, unchanged.' }],
      errors: [...writeErrors, 'not_found', 'idempotency_conflict', ...ledgerErrors, ...platformErrors],
      async handle({ service }, { actor, params, body, idempotencyKey }) {
        const outcome = await service.billing.creditOrganisation(actor, params.id!, {
          idempotencyKey, amountMicros: body.amount_micros, reason: body.reason,
        });
        return outcome.replayed
          ? { status: 200, body: creditJson(outcome), headers: { 'idempotent-replayed': 'true' } }
          : { status: 201, body: creditJson(outcome) };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}/balance', operationId: 'getBalance', tag: 'balance', authenticated: true, access: 'organisation', role: 'viewer', scope: 'organisation',
      summary: 'Get the organisation balance from the ledger.',
      success: { status: 200, description: 'The balance.', schema: balanceResponse },
      errors: ['unauthenticated', 'not_found', ...ledgerErrors],
      async handle({ service }, { actor, params }) {
        return { status: 200, body: balanceJson(await service.billing.getBalance(actor, params.id!)) };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}/usage', operationId: 'listUsage', tag: 'balance', authenticated: true, access: 'organisation', role: 'viewer', scope: 'organisation',
      summary: 'List usage records, newest first (cursor paging).',
      query: usageQuery,
      success: { status: 200, description: 'A page of usage records.', schema: usageListResponse },
      errors: [...readErrors, ...ledgerErrors],
      async handle({ service }, { actor, params, query }) {
        const page = await service.platform.listUsage(actor, params.id!, {
          projectId: query.project_id, modelSlug: query.model, fromMs: query.from, toMs: query.to,
          limit: query.limit ?? pageSizes.usageDefault, cursor: query.cursor,
        });
        return { status: 200, body: { object: 'list', data: page.records.map(usageRecordJson), next_cursor: page.nextCursor } };
      },
    }),
    defineRoute({
      method: 'post', path: '/admin/v1/organisations/{id}/projects', operationId: 'createProject', tag: 'projects', authenticated: true, access: 'organisation', role: 'developer', scope: 'organisation',
      summary: 'Create a project and its API key (the secret is in the response, once).',
      description: 'Returns after every connected proxy acknowledged the version holding the new key, so the key works at once; after SNAPSHOT_ACK_TIMEOUT_MS it returns anyway with `x-config-propagation: pending`.',
      body: createProjectBody, changesConfig: true,
      success: { status: 201, description: 'The project and, in `api_key`, its secret.', schema: projectCreatedResponse },
      errors: [...writeErrors, 'not_found'],
      async handle({ service }, { actor, params, body }) {
        const { project, apiKey, propagation } = await service.tenancy.createProject(actor, params.id!, { name: body.name });
        return { status: 201, body: { project: projectJson(project), api_key: apiKey }, propagation };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}/projects', operationId: 'listProjects', tag: 'projects', authenticated: true, access: 'organisation', role: 'viewer', scope: 'organisation',
      summary: 'List the projects of an organisation in creation order (cursor paging).',
      query: listQuery,
      success: { status: 200, description: 'A page of projects.', schema: listResponse(projectResponse) },
      errors: readErrors,
      async handle({ service }, { actor, params, query }) {
        const page = await service.tenancy.listProjects(actor, params.id!, { limit: query.limit ?? pageSizes.default, after: query.after });
        return { status: 200, body: listJson(page, projectJson) };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/projects/{id}', operationId: 'getProject', tag: 'projects', authenticated: true, access: 'organisation', role: 'viewer', scope: 'project',
      summary: 'Get a project (never its key secret).',
      success: { status: 200, description: 'The project.', schema: projectResponse },
      errors: ['unauthenticated', 'not_found'],
      async handle({ service }, { actor, params }) {
        return { status: 200, body: projectJson(await service.tenancy.getProject(actor, params.id!)) };
      },
    }),
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
      method: 'get', path: '/admin/v1/organisations/{id}/usage/summary', operationId: 'summarizeUsage', tag: 'balance',
      authenticated: true, access: 'organisation', role: 'viewer', scope: 'organisation',
      summary: 'Usage summed by day (Asia/Kolkata) and gateway model (and project with group_by=project), from the ledger.',
      query: usageSummaryQuery,
      success: { status: 200, description: 'The summary rows, by day then model.', schema: usageSummaryResponse },
      errors: [...readErrors, ...ledgerErrors],
      async handle({ service }, { actor, params, query }) {
        const rows = await service.platform.summarizeUsage(actor, params.id!, {
          projectId: query.project_id, fromMs: query.from, toMs: query.to, groupByProject: query.group_by === 'project',
        });
        return { status: 200, body: { object: 'list', data: rows.map(usageSummaryRowJson) } };
      },
    }),
    defineRoute({
      method: 'patch', path: '/admin/v1/projects/{id}', operationId: 'updateProject', tag: 'projects', authenticated: true, access: 'organisation', role: 'developer', scope: 'project',
      summary: 'Rename, disable or re-enable a project.',
      description: 'Disabling is a hard cutover: the call returns once every connected proxy refuses the project\'s key (or after SNAPSHOT_ACK_TIMEOUT_MS with `x-config-propagation: pending`).',
      body: updateProjectBody, changesConfig: true,
      success: { status: 200, description: 'The project after the change.', schema: projectResponse },
      errors: [...writeErrors, 'not_found'],
      async handle({ service }, { actor, params, body }) {
        const { project, propagation } = await service.tenancy.updateProject(actor, params.id!, { name: body.name, status: body.status });
        return { status: 200, body: projectJson(project), propagation };
      },
    }),
    defineRoute({
      method: 'post', path: '/admin/v1/projects/{id}/api-key-rotations', operationId: 'rotateProjectApiKey', tag: 'projects',
      authenticated: true, access: 'organisation', role: 'developer', scope: 'project',
      summary: 'Rotate the project\'s API key (hard cutover; the new secret is in the response, once).',
      description: 'The old key is revoked and a new one issued in one transaction. The call returns only after every connected proxy has acknowledged the config version without the old key, so from then on the old key gets 401 on every proxy and the new one works. A proxy that does not acknowledge within SNAPSHOT_ACK_TIMEOUT_MS is disconnected (it must resync before serving past its staleness bound) and the answer carries `x-config-propagation: pending`.',
      changesConfig: true,
      success: { status: 201, description: 'The project with its new key and, in `api_key`, the new secret.', schema: projectCreatedResponse },
      errors: ['unauthenticated', 'not_found'],
      async handle({ service }, { actor, params }) {
        const { project, apiKey, propagation } = await service.tenancy.rotateProjectKey(actor, params.id!);
        return { status: 201, body: { project: projectJson(project), api_key: apiKey }, propagation };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/projects/{id}/budget', operationId: 'getProjectBudget', tag: 'projects', authenticated: true, access: 'organisation', role: 'viewer', scope: 'project',
      summary: 'The project\'s monthly budget and its spend this month (from the ledger).',
      success: { status: 200, description: 'Budget and spend.', schema: projectBudgetResponse },
      errors: ['unauthenticated', 'not_found', ...ledgerErrors],
      async handle({ service }, { actor, params }) {
        return { status: 200, body: projectBudgetJson(await service.tenancy.getProjectBudget(actor, params.id!)) };
      },
    }),
    defineRoute({
      method: 'put', path: '/admin/v1/projects/{id}/budget', operationId: 'setProjectBudget', tag: 'projects', authenticated: true, access: 'organisation', role: 'developer', scope: 'project',
      summary: 'Set the project\'s monthly budget: a cap in micro-rupees and a soft-alert threshold (percent, default 80).',
      description: 'Kept by the ledger, which refuses a Reserve (402) that would take the project\'s spend this month (settled + held) past the cap, and raises one soft alert per month at the threshold. Setting or lowering a cap answers once the proxies\' credit grants of the project are recalled, so every request admitted after the answer is under the new cap.',
      body: projectBudgetBody,
      success: { status: 200, description: 'Budget and spend after the change.', schema: projectBudgetResponse },
      errors: [...writeErrors, 'not_found', ...ledgerErrors],
      async handle({ service }, { actor, params, body }) {
        const spend = await service.tenancy.setProjectBudget(actor, params.id!, { monthlyCapMicros: body.monthly_cap_micros, softAlertPercent: body.soft_alert_percent ?? 80 });
        return { status: 200, body: projectBudgetJson(spend) };
      },
    }),
    defineRoute({
      method: 'delete', path: '/admin/v1/projects/{id}/budget', operationId: 'clearProjectBudget', tag: 'projects', authenticated: true, access: 'organisation', role: 'developer', scope: 'project',
      summary: 'Clear the project\'s monthly budget (no cap).',
      success: { status: 200, description: 'Budget (none) and spend after the change.', schema: projectBudgetResponse },
      errors: ['unauthenticated', 'not_found', ...ledgerErrors],
      async handle({ service }, { actor, params }) {
        return { status: 200, body: projectBudgetJson(await service.tenancy.setProjectBudget(actor, params.id!, null)) };
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
    defineRoute({
      method: 'post', path: '/admin/v1/platform-admin-tokens', operationId: 'createPlatformAdminToken', tag: 'tokens', authenticated: true, access: 'platform',
      summary: 'Issue another platform-admin token (the secret is in the response, once).',
      body: createTokenBody,
      success: { status: 201, description: 'The token and, in `secret`, its secret.', schema: adminTokenCreatedResponse },
      errors: [...writeErrors, ...platformErrors],
      async handle({ service }, { actor, body }) {
        const { token, secret } = await service.tenancy.createPlatformAdminToken(actor, { name: body.name });
        return { status: 201, body: { token: adminTokenJson(token), secret } };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/platform-admin-tokens', operationId: 'listPlatformAdminTokens', tag: 'tokens', authenticated: true, access: 'platform',
      summary: 'List platform-admin tokens in creation order, revoked ones included (cursor paging).',
      query: listQuery,
      success: { status: 200, description: 'A page of tokens.', schema: listResponse(adminTokenResponse) },
      errors: ['unauthenticated', 'invalid_request', ...platformErrors],
      async handle({ service }, { actor, query }) {
        const page = await service.tenancy.listPlatformAdminTokens(actor, { limit: query.limit ?? pageSizes.default, after: query.after });
        return { status: 200, body: listJson(page, adminTokenJson) };
      },
    }),
    defineRoute({
      method: 'delete', path: '/admin/v1/platform-admin-tokens/{id}', operationId: 'revokePlatformAdminToken', tag: 'tokens', authenticated: true, access: 'platform',
      summary: 'Revoke a platform-admin token (idempotent; the last active one cannot be revoked).',
      success: { status: 200, description: 'The token, revoked.', schema: adminTokenResponse },
      errors: ['unauthenticated', 'not_found', 'conflict'],
      async handle({ service }, { actor, params }) {
        return { status: 200, body: adminTokenJson(await service.tenancy.revokePlatformAdminToken(actor, params.id!)) };
      },
    }),
    defineRoute({
      method: 'post', path: '/admin/v1/organisations/{id}/tokens', operationId: 'createOrganisationToken', tag: 'tokens', authenticated: true, access: 'platform', scope: 'organisation',
      summary: 'Issue a token that sees and changes only this organisation (the secret is in the response, once).',
      description: 'For the organisation\'s own automation: it may read the organisation, its balance and usage, and manage its projects, keys and budgets. Any other organisation\'s ids answer 404.',
      body: createTokenBody,
      success: { status: 201, description: 'The token and, in `secret`, its secret.', schema: adminTokenCreatedResponse },
      errors: [...writeErrors, 'not_found', ...platformErrors],
      async handle({ service }, { actor, params, body }) {
        const { token, secret } = await service.tenancy.createOrganisationToken(actor, params.id!, { name: body.name });
        return { status: 201, body: { token: adminTokenJson(token), secret } };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}/tokens', operationId: 'listOrganisationTokens', tag: 'tokens', authenticated: true, access: 'organisation', role: 'owner', scope: 'organisation',
      summary: 'List the organisation\'s tokens in creation order, revoked ones included (cursor paging).',
      query: listQuery,
      success: { status: 200, description: 'A page of tokens.', schema: listResponse(adminTokenResponse) },
      errors: readErrors,
      async handle({ service }, { actor, params, query }) {
        const page = await service.tenancy.listOrganisationTokens(actor, params.id!, { limit: query.limit ?? pageSizes.default, after: query.after });
        return { status: 200, body: listJson(page, adminTokenJson) };
      },
    }),
    defineRoute({
      method: 'delete', path: '/admin/v1/organisations/{id}/tokens/{token_id}', operationId: 'revokeOrganisationToken', tag: 'tokens',
      authenticated: true, access: 'organisation', role: 'owner', scope: 'organisation',
      summary: 'Revoke one of the organisation\'s tokens (idempotent).',
      success: { status: 200, description: 'The token, revoked.', schema: adminTokenResponse },
      errors: ['unauthenticated', 'not_found'],
      async handle({ service }, { actor, params }) {
        return { status: 200, body: adminTokenJson(await service.tenancy.revokeOrganisationToken(actor, params.id!, params.token_id!)) };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/audit-events', operationId: 'listAuditEvents', tag: 'audit', authenticated: true,
      access: 'organisation', role: 'owner', scope: 'organisation_id',
      summary: 'The audit log, oldest first (cursor paging): who changed what, when, with before/after values.',
      description: 'One organisation\'s events, for its owners: the one `organisation_id` names, or without it the caller\'s only organisation (a member of several must name one: 400; an organisation token reads its own). Below owner there: 403; an organisation the caller cannot see: 404, as an unknown id. A platform admin reads every event, or one organisation\'s with `organisation_id`.',
      query: auditEventsQuery,
      success: { status: 200, description: 'A page of audit events.', schema: listResponse(auditEventResponse) },
      errors: [...readErrors, 'permission_denied'],
      async handle({ service }, { actor, organisationId, query }) {
        const page = await service.platform.listAuditEvents(actor, { organisationId, afterId: query.after, limit: query.limit ?? pageSizes.default });
        return { status: 200, body: listJson(page, auditEventJson) };
      },
    }),
    ...peopleRoutes(),
    ...alertRoutes(),
    ...modelAliasRoutes(),
    ...analyticsRoutes(),
    ...billingRoutes(),
    ...invoiceRoutes(),
    ...refundRoutes(),
    ...paymentReversalRoutes(),
  ];
}
