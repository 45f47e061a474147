import { adminTokenJson, organisationJson, projectBudgetJson, projectJson } from './tenancy-views.ts';
import {
  adminTokenCreatedResponse, adminTokenResponse, createOrganisationBody, createProjectBody, createTokenBody, organisationResponse,
  projectBudgetBody, projectBudgetResponse, projectCreatedResponse, projectResponse, responseStorageBody, updateOrganisationBody, updateProjectBody,
} from './tenancy-schemas.ts';
import { listJson } from '../../common/http/json-views.ts';
import { listQuery, pageSizes } from '../../common/http/request-schemas.ts';
import { listResponse } from '../../common/http/response-schemas.ts';
import { defineRoute, routeErrors, type AdminRoute } from '../../common/http/route-definition.ts';

const readErrors = routeErrors.read;
const platformErrors = routeErrors.platform;
const writeErrors = routeErrors.write;
const ledgerErrors = routeErrors.ledger;

/** The organisation routes: create, list, read, change, and set response storage. */
export function organisationRoutes(): AdminRoute[] {
  return [
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
  ];
}

/** The project routes: create (with its first key), list, read and change. */
export function projectRoutes(): AdminRoute[] {
  return [
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
  ];
}

/** A project's key rotation and monthly budget routes. */
export function projectKeyAndBudgetRoutes(): AdminRoute[] {
  return [
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
  ];
}

/** The admin-API token routes: platform-admin tokens and organisation tokens. */
export function adminTokenRoutes(): AdminRoute[] {
  return [
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
  ];
}
