import type { ErrorCode } from '@gateway/errors';
import { z } from 'zod';
import type { Propagation } from '../domain/admin-records.ts';
import type { AdminService } from '../domain/admin-service.ts';
import type { UpstreamUrlPolicy } from '../domain/upstream-url.ts';
import {
  balanceJson, creditJson, gatewayModelJson, listJson, organisationJson, projectJson, usageRecordJson,
} from './json-views.ts';
import {
  createCreditBody, createGatewayModelBody, createOrganisationBody, createProjectBody, idempotencyKeyHeader, listQuery,
  pageSizes, updateOrganisationBody, usageQuery,
} from './request-schemas.ts';
import {
  balanceResponse, creditResponse, gatewayModelResponse, healthResponse, listResponse, organisationResponse,
  projectCreatedResponse, projectResponse, usageListResponse,
} from './response-schemas.ts';

/** What a route handler may use besides its request. */
export interface RouteContext {
  service: AdminService;
  isReady(): boolean;
  /** The OpenAPI document of these routes (served by GET /admin/v1/openapi.json). */
  openApiDocument(): object;
}

/** A request after validation: path parameters, parsed query and body, the Idempotency-Key. */
export interface RouteRequest<Query, Body> {
  params: Record<string, string>;
  query: Query;
  body: Body;
  /** The validated Idempotency-Key header, on routes that require one; '' elsewhere. */
  idempotencyKey: string;
}

/** What a handler answers: status and JSON body, plus extra headers and config propagation. */
export interface RouteResult {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /** Set by calls that change what proxies serve; `pending` becomes `x-config-propagation: pending`. */
  propagation?: Propagation;
}

/** One route of the admin HTTP API: everything the server and the OpenAPI document need. */
export interface AdminRoute {
  method: 'get' | 'post' | 'patch';
  /** OpenAPI path template, e.g. /admin/v1/organisations/{id}. */
  path: string;
  /** Express path when it differs from the template (a slug may contain slashes). */
  expressPath?: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  /** Whether a platform-admin bearer token is required. */
  authenticated: boolean;
  query?: z.ZodType;
  body?: z.ZodType;
  /** Whether the route requires an Idempotency-Key header. */
  idempotencyKey?: boolean;
  /** Whether the route changes what proxies serve (waits for acks; may answer x-config-propagation: pending). */
  changesConfig?: boolean;
  success: { status: number; description: string; schema: z.ZodType };
  /** Extra documented success answers, e.g. 200 for an idempotent replay. */
  alsoSucceeds?: Array<{ status: number; description: string }>;
  /** Catalogue codes the route can answer with, for the document. */
  errors: ErrorCode[];
  handle(context: RouteContext, request: RouteRequest<unknown, unknown>): Promise<RouteResult>;
}

/** Declares a route with handler types inferred from its query and body schemas. */
function defineRoute<Query extends z.ZodType = z.ZodUndefined, Body extends z.ZodType = z.ZodUndefined>(
  route: Omit<AdminRoute, 'query' | 'body' | 'handle'> & {
    query?: Query;
    body?: Body;
    handle(context: RouteContext, request: RouteRequest<z.output<Query>, z.output<Body>>): Promise<RouteResult>;
  },
): AdminRoute {
  return route as AdminRoute;
}

const readErrors: ErrorCode[] = ['unauthenticated', 'not_found', 'invalid_request'];
const writeErrors: ErrorCode[] = ['unauthenticated', 'invalid_request', 'invalid_json', 'request_too_large'];
const ledgerErrors: ErrorCode[] = ['service_unavailable'];

/** The admin API's routes. The SSRF policy shapes the gateway-model body's validation. */
export function createAdminRoutes(policy: UpstreamUrlPolicy): AdminRoute[] {
  return [
    defineRoute({
      method: 'get', path: '/healthz', operationId: 'getHealth', tag: 'system', authenticated: false,
      summary: 'Liveness: the process is running.',
      success: { status: 200, description: 'Always {"status":"ok"} while the process runs.', schema: healthResponse },
      errors: [],
      handle: async () => ({ status: 200, body: { status: 'ok' } }),
    }),
    defineRoute({
      method: 'get', path: '/readyz', operationId: 'getReadiness', tag: 'system', authenticated: false,
      summary: 'Readiness: the database is migrated and the config stream is listening.',
      success: { status: 200, description: '{"status":"ready"}; 503 with {"status":"not_ready"} otherwise.', schema: healthResponse },
      alsoSucceeds: [{ status: 503, description: 'Not ready (starting or shutting down).' }],
      errors: [],
      handle: async (context) => (context.isReady()
        ? { status: 200, body: { status: 'ready' } }
        : { status: 503, body: { status: 'not_ready' } }),
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/openapi.json', operationId: 'getOpenApiDocument', tag: 'system', authenticated: false,
      summary: 'This OpenAPI 3.1 document (no token needed: it is public in the repository too).',
      success: { status: 200, description: 'The OpenAPI document.', schema: z.object({}).loose() },
      errors: [],
      handle: async (context) => ({ status: 200, body: context.openApiDocument() }),
    }),

    defineRoute({
      method: 'post', path: '/admin/v1/organisations', operationId: 'createOrganisation', tag: 'organisations', authenticated: true,
      summary: 'Create an organisation (and open its ledger account).',
      body: createOrganisationBody, changesConfig: true,
      success: { status: 201, description: 'The organisation.', schema: organisationResponse },
      errors: [...writeErrors, ...ledgerErrors],
      async handle({ service }, { body }) {
        const { organisation, propagation } = await service.createOrganisation({
          name: body.name,
          billingMode: body.billing_mode ?? 'commercial',
          rpmLimit: body.rpm_limit ?? 600,
          allowedGatewayModels: body.allowed_gateway_models ?? [],
        });
        return { status: 201, body: organisationJson(organisation), propagation };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/organisations', operationId: 'listOrganisations', tag: 'organisations', authenticated: true,
      summary: 'List organisations in creation order (cursor paging).',
      query: listQuery,
      success: { status: 200, description: 'A page of organisations.', schema: listResponse(organisationResponse) },
      errors: ['unauthenticated', 'invalid_request'],
      async handle({ service }, { query }) {
        const page = await service.listOrganisations({ limit: query.limit ?? pageSizes.default, after: query.after });
        return { status: 200, body: listJson(page, organisationJson) };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}', operationId: 'getOrganisation', tag: 'organisations', authenticated: true,
      summary: 'Get an organisation.',
      success: { status: 200, description: 'The organisation.', schema: organisationResponse },
      errors: ['unauthenticated', 'not_found'],
      async handle({ service }, { params }) {
        return { status: 200, body: organisationJson(await service.getOrganisation(params.id!)) };
      },
    }),
    defineRoute({
      method: 'patch', path: '/admin/v1/organisations/{id}', operationId: 'updateOrganisation', tag: 'organisations', authenticated: true,
      summary: 'Change an organisation (suspend, billing mode, RPM, allowed models).',
      description: 'Returns after every connected proxy acknowledged the change (a suspension is a hard cutover), or after SNAPSHOT_ACK_TIMEOUT_MS with `x-config-propagation: pending`.',
      body: updateOrganisationBody, changesConfig: true,
      success: { status: 200, description: 'The organisation after the change.', schema: organisationResponse },
      errors: [...writeErrors, 'not_found'],
      async handle({ service }, { params, body }) {
        const { organisation, propagation } = await service.updateOrganisation(params.id!, {
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
      method: 'post', path: '/admin/v1/organisations/{id}/credits', operationId: 'creditOrganisation', tag: 'balance', authenticated: true,
      summary: 'Credit the organisation balance (idempotent per Idempotency-Key).',
      description: 'The ledger credit id is `manual:<organisation id>:<Idempotency-Key>`. The first successful call answers 201; a replay with the same key and body answers 200 with the same body and `Idempotent-Replayed: true`; the same key with a different body answers 409 idempotency_conflict.',
      body: createCreditBody, idempotencyKey: true,
      success: { status: 201, description: 'Credited.', schema: creditResponse },
      alsoSucceeds: [{ status: 200, description: 'A replay: the first call\'s result, unchanged.' }],
      errors: [...writeErrors, 'not_found', 'idempotency_conflict', ...ledgerErrors],
      async handle({ service }, { params, body, idempotencyKey }) {
        const outcome = await service.creditOrganisation(params.id!, {
          idempotencyKey, amountMicros: body.amount_micros, reason: body.reason,
        });
        return outcome.replayed
          ? { status: 200, body: creditJson(outcome), headers: { 'idempotent-replayed': 'true' } }
          : { status: 201, body: creditJson(outcome) };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}/balance', operationId: 'getBalance', tag: 'balance', authenticated: true,
      summary: 'Get the organisation balance from the ledger.',
      success: { status: 200, description: 'The balance.', schema: balanceResponse },
      errors: ['unauthenticated', 'not_found', ...ledgerErrors],
      async handle({ service }, { params }) {
        return { status: 200, body: balanceJson(await service.getBalance(params.id!)) };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}/usage', operationId: 'listUsage', tag: 'balance', authenticated: true,
      summary: 'List usage records, newest first (cursor paging).',
      query: usageQuery,
      success: { status: 200, description: 'A page of usage records.', schema: usageListResponse },
      errors: [...readErrors, ...ledgerErrors],
      async handle({ service }, { params, query }) {
        const page = await service.listUsage(params.id!, {
          projectId: query.project_id, modelSlug: query.model, limit: query.limit ?? pageSizes.usageDefault, cursor: query.cursor,
        });
        return { status: 200, body: { object: 'list', data: page.records.map(usageRecordJson), next_cursor: page.nextCursor } };
      },
    }),
    defineRoute({
      method: 'post', path: '/admin/v1/organisations/{id}/projects', operationId: 'createProject', tag: 'projects', authenticated: true,
      summary: 'Create a project and its API key (the secret is in the response, once).',
      description: 'Returns after every connected proxy acknowledged the version holding the new key, so the key works at once; after SNAPSHOT_ACK_TIMEOUT_MS it returns anyway with `x-config-propagation: pending`.',
      body: createProjectBody, changesConfig: true,
      success: { status: 201, description: 'The project and, in `api_key`, its secret.', schema: projectCreatedResponse },
      errors: [...writeErrors, 'not_found'],
      async handle({ service }, { params, body }) {
        const { project, apiKey, propagation } = await service.createProject(params.id!, { name: body.name });
        return { status: 201, body: { project: projectJson(project), api_key: apiKey }, propagation };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}/projects', operationId: 'listProjects', tag: 'projects', authenticated: true,
      summary: 'List the projects of an organisation in creation order (cursor paging).',
      query: listQuery,
      success: { status: 200, description: 'A page of projects.', schema: listResponse(projectResponse) },
      errors: readErrors,
      async handle({ service }, { params, query }) {
        const page = await service.listProjects(params.id!, { limit: query.limit ?? pageSizes.default, after: query.after });
        return { status: 200, body: listJson(page, projectJson) };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/projects/{id}', operationId: 'getProject', tag: 'projects', authenticated: true,
      summary: 'Get a project (never its key secret).',
      success: { status: 200, description: 'The project.', schema: projectResponse },
      errors: ['unauthenticated', 'not_found'],
      async handle({ service }, { params }) {
        return { status: 200, body: projectJson(await service.getProject(params.id!)) };
      },
    }),
    defineRoute({
      method: 'post', path: '/admin/v1/gateway-models', operationId: 'createGatewayModel', tag: 'gateway models', authenticated: true,
      summary: 'Create a gateway model (the upstream credential is encrypted at rest and never returned).',
      body: createGatewayModelBody(policy), changesConfig: true,
      success: { status: 201, description: 'The gateway model.', schema: gatewayModelResponse },
      errors: [...writeErrors, 'conflict'],
      async handle({ service }, { body }) {
        const { gatewayModel, propagation } = await service.createGatewayModel({
          slug: body.slug,
          displayName: body.display_name,
          defaultMaxTokens: body.default_max_tokens,
          maxContextTokens: body.max_context_tokens,
          inputPriceMicrosPerMtok: body.input_price_micros_per_mtok,
          outputPriceMicrosPerMtok: body.output_price_micros_per_mtok,
          providerInputCostMicrosPerMtok: body.provider_input_cost_micros_per_mtok ?? 0n,
          providerOutputCostMicrosPerMtok: body.provider_output_cost_micros_per_mtok ?? 0n,
          upstream: {
            providerKind: body.upstream.provider_kind,
            baseUrl: body.upstream.base_url,
            model: body.upstream.model,
            apiKey: body.upstream.api_key,
          },
        });
        return { status: 201, body: gatewayModelJson(gatewayModel), propagation };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/gateway-models', operationId: 'listGatewayModels', tag: 'gateway models', authenticated: true,
      summary: 'List gateway models by slug (cursor paging: `after` is a slug).',
      query: listQuery,
      success: { status: 200, description: 'A page of gateway models.', schema: listResponse(gatewayModelResponse) },
      errors: ['unauthenticated', 'invalid_request'],
      async handle({ service }, { query }) {
        const page = await service.listGatewayModels({ limit: query.limit ?? pageSizes.default, after: query.after });
        return { status: 200, body: listJson(page, gatewayModelJson) };
      },
    }),
    defineRoute({
      method: 'get', path: '/admin/v1/gateway-models/{slug}', expressPath: '/admin/v1/gateway-models/*slug',
      operationId: 'getGatewayModel', tag: 'gateway models', authenticated: true,
      summary: 'Get a gateway model. A slug containing "/" may be sent as is or percent-encoded.',
      success: { status: 200, description: 'The gateway model.', schema: gatewayModelResponse },
      errors: ['unauthenticated', 'not_found'],
      async handle({ service }, { params }) {
        return { status: 200, body: gatewayModelJson(await service.getGatewayModel(params.slug!)) };
      },
    }),
  ];
}
