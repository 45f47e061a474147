import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { createHealthProbes } from '@gateway/service-runtime';
import type { AdminService } from '../../admin-service.ts';
import { openApiFilePath, openApiFileText } from '../../write-openapi.ts';
import { createAdminHttpApp } from './admin-http-app.ts';
import { createAdminRoutes } from './admin-routes.ts';
import { buildOpenApiDocument } from './openapi-document.ts';

/** Every method + path the express app really serves, in OpenAPI form (`:id`, `*slug` → `{…}`). */
function servedOperations(): string[] {
  const routes = createAdminRoutes({ allowPrivate: false });
  const app = createAdminHttpApp({
    routes,
    context: { service: {} as AdminService, openApiDocument: () => ({}) },
    probes: createHealthProbes({ isServing: () => true }),
    authenticate: async () => undefined,
    organisationOfProject: async () => undefined,
    logger: createLogger('admin', 'silent'),
  });
  const stack = (app as unknown as { router: { stack: Array<{ route?: { path: string; methods: Record<string, boolean> } }> } }).router.stack;
  const operations: string[] = [];
  for (const layer of stack) {
    if (!layer.route) continue;
    const path = layer.route.path.replace(/[:*]([A-Za-z0-9_]+)/g, '{$1}');
    for (const method of Object.keys(layer.route.methods)) operations.push(`${method.toUpperCase()} ${path}`);
  }
  return operations.sort();
}

function documentedOperations(document: Record<string, unknown>): string[] {
  const paths = document.paths as Record<string, Record<string, unknown>>;
  return Object.entries(paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`)).sort();
}

describe('the OpenAPI document', () => {
  const document = buildOpenApiDocument(createAdminRoutes({ allowPrivate: false }));

  it('describes exactly the routes the server serves', () => {
    const served = servedOperations();
    expect(served.length).toBeGreaterThanOrEqual(28);
    expect(documentedOperations(document)).toEqual(served);
  });

  it('is OpenAPI 3.1 with a security scheme on every admin route and an error schema', () => {
    expect(document.openapi).toBe('3.1.0');
    const paths = document.paths as Record<string, Record<string, { security: unknown[]; responses: Record<string, unknown>; 'x-access': string }>>;
    for (const [path, operations] of Object.entries(paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        // The probes, this document, the payment provider's webhook (signed) and the /auth sign-in routes (they check the session cookie themselves).
        const isPublic = ['/healthz', '/readyz', '/admin/v1/openapi.json', '/webhooks/razorpay'].includes(path) || (path.startsWith('/auth/') && operation['x-access'] === 'public');
        expect(operation.security, `${method} ${path}`).toEqual(isPublic ? [] : [{ adminToken: [] }]);
        if (!isPublic) expect(Object.keys(operation.responses), `${method} ${path}`).toContain('401');
      }
    }
    expect(JSON.stringify(document)).not.toContain('"$defs"');
  });

  it('is committed up to date as services/admin/openapi.json (regenerate: node services/admin/src/write-openapi.ts)', () => {
    expect(readFileSync(openApiFilePath, 'utf8')).toBe(openApiFileText());
  });
});
