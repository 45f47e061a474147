import { errorCatalogue, type ErrorCode } from '@gateway/errors';
import { z } from 'zod';
import type { AdminRoute } from './route-definition.ts';
import { namedResponseSchemas } from './named-response-schemas.ts';
import { errorResponse } from './response-schemas.ts';

type JsonSchema = Record<string, unknown>;

/** A zod schema as an embedded JSON Schema (2020-12, what OpenAPI 3.1 uses). */
function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, target: 'draft-2020-12', reused: 'inline' }) as JsonSchema;
  return rest;
}

function pathParameters(path: string) {
  return [...path.matchAll(/\{([^}]+)\}/g)].map(([, name]) => ({
    name, in: 'path', required: true,
    schema: { type: 'string' },
    description: name === 'slug' ? 'Gateway model slug.' : name === 'token_id' ? 'Token id.' : 'Resource id.',
  }));
}

function queryParameters(query: z.ZodType | undefined) {
  if (!query) return [];
  const schema = jsonSchemaOf(query, 'input');
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => {
    const { description, ...propertySchema } = property;
    return { name, in: 'query', required: required.has(name), schema: propertySchema, ...(description ? { description } : {}) };
  });
}

/** Documented error answers of a route, grouped by HTTP status. */
function errorResponses(codes: readonly ErrorCode[], authenticated: boolean) {
  // Every route: headers over the server's limit are answered before routing (431).
  const all = new Set<ErrorCode>([...codes, 'headers_too_large', 'internal_error']);
  if (authenticated) all.add('unauthenticated');
  // Ids an organisation token may not see answer 404, exactly like unknown ones.
  if (authenticated) all.add('not_found');
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of all) {
    const status = errorCatalogue[code].httpStatus;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries([...byStatus.entries()].sort(([a], [b]) => a - b).map(([status, statusCodes]) => [String(status), {
    description: `Error (error.code: ${statusCodes.join(', ')}).`,
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  }]));
}

const requestIdHeader = {
  description: 'The request id: the caller\'s x-request-id when sane, else a fresh UUID. Also on every log line of the request.',
  schema: { type: 'string' },
};
const propagationHeader = {
  description: 'Present with the value "pending" when connected proxies did not acknowledge the change within SNAPSHOT_ACK_TIMEOUT_MS. The change is committed either way.',
  schema: { type: 'string', enum: ['pending'] },
};

/** Builds the OpenAPI 3.1 document of the admin API from its route table. */
export function buildOpenApiDocument(routes: readonly AdminRoute[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const componentSchemas: Record<string, JsonSchema> = { Error: jsonSchemaOf(errorResponse, 'output') };
  /** A response schema: a $ref to its component when it is a named one, else inline. */
  const responseSchemaOf = (schema: z.ZodType): JsonSchema => {
    const name = namedResponseSchemas.get(schema);
    if (name === undefined) return jsonSchemaOf(schema, 'output');
    componentSchemas[name] ??= jsonSchemaOf(schema, 'output');
    return { $ref: `#/components/schemas/${name}` };
  };
  for (const route of routes) {
    const successHeaders: Record<string, unknown> = { 'x-request-id': requestIdHeader };
    if (route.changesConfig) successHeaders['x-config-propagation'] = propagationHeader;
    const parameters = [
      ...pathParameters(route.path),
      ...queryParameters(route.query),
      ...(route.idempotencyKey ? [{
        name: 'Idempotency-Key', in: 'header', required: true,
        description: 'Makes the call safe to retry: 1..128 characters of A-Z a-z 0-9 _ - : .',
        schema: { type: 'string', pattern: '^[A-Za-z0-9_\\-:.]{1,128}$' },
      }] : []),
    ];
    const responses: Record<string, unknown> = {
      [String(route.success.status)]: {
        description: route.success.description,
        headers: successHeaders,
        // A 204 has no body to describe.
        ...(route.success.status === 204 ? {} : {
          content: { [route.success.contentType ?? 'application/json']: { schema: responseSchemaOf(route.success.schema) } },
        }),
      },
    };
    for (const extra of route.alsoSucceeds ?? []) {
      responses[String(extra.status)] = {
        description: extra.description,
        headers: successHeaders,
        content: { 'application/json': { schema: responseSchemaOf(route.success.schema) } },
      };
    }
    Object.assign(responses, errorResponses(route.errors, route.authenticated));
    paths[route.path] ??= {};
    paths[route.path]![route.method] = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: [route.tag],
      security: route.authenticated ? [{ adminToken: [] }] : [],
      'x-access': route.access,
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(route.body ? {
        requestBody: { required: true, content: { 'application/json': { schema: jsonSchemaOf(route.body, 'input') } } },
      } : {}),
      responses,
    };
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Inference gateway admin API',
      version: '1.0.0',
      description: 'Control plane of the gateway: organisations, projects and API keys, gateway models, credits, balances, usage, budgets, tokens and the audit log. '
        + 'JSON is snake_case; money is a decimal string of micro-rupees (1 INR = 1,000,000); errors are OpenAI-shaped. See docs/admin-api.md.',
    },
    tags: [
      { name: 'organisations' }, { name: 'projects' }, { name: 'gateway models' }, { name: 'balance' }, { name: 'tokens' },
      { name: 'audit' }, { name: 'analytics' }, { name: 'billing' }, { name: 'invoices' }, { name: 'people' }, { name: 'sign-in' }, { name: 'system' },
    ],
    components: {
      securitySchemes: {
        adminToken: {
          type: 'http', scheme: 'bearer',
          description: 'An admin token (gwadm_…). A platform-admin token (first one from the command line, `pnpm --filter @gateway/admin cli create-platform-admin-token`, or printed at first start) may do everything; an organisation token (POST /admin/v1/organisations/{id}/tokens) sees and changes only its organisation. Operations marked `x-access: platform` refuse organisation tokens (403, or 404 for ids that are not their own).',
        },
      },
      schemas: Object.fromEntries(Object.entries(componentSchemas).sort(([a], [b]) => a.localeCompare(b))),
    },
    paths,
  };
}
