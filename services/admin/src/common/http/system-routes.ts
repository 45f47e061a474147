import { z } from 'zod';
import { healthResponse } from './response-schemas.ts';
import { defineRoute, type AdminRoute } from './route-definition.ts';

/** The public system routes: the liveness and readiness probes and the OpenAPI document of this API. */
export function systemRoutes(): AdminRoute[] {
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
  ];
}
