/**
 * Writes services/admin/openapi.json, the repository's copy of the admin API's OpenAPI
 * document, from the same route table and zod schemas the service validates with:
 * `node services/admin/src/write-openapi.ts`. A test fails when the copy is stale.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createAdminRoutes } from './common/http/admin-routes.ts';
import { buildOpenApiDocument } from './common/http/openapi-document.ts';

/** Where the committed copy of the document lives. */
export const openApiFilePath = new URL('../openapi.json', import.meta.url);

/** The committed document's exact text: the document as served, pretty-printed. */
export function openApiFileText(): string {
  return `${JSON.stringify(buildOpenApiDocument(createAdminRoutes({ allowPrivate: false })), null, 2)}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(openApiFilePath, openApiFileText());
  process.stdout.write(`wrote ${openApiFilePath.pathname}\n`);
}
