import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAdminRoutes } from './admin-routes.ts';

const webSource = join(import.meta.dirname, '../../../web/src');

/** The dashboard's source files (tests excluded): the pages and the shell that gate on operations. */
function dashboardFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return dashboardFiles(path);
    return /\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name) ? [path] : [];
  });
}

/**
 * The operationIds the dashboard gates on, in the three ways it names them: `allows(allowed, 'x')`,
 * a page's `can('x')`, and a page table entry's `operation: 'x'`.
 */
function operationsNamedByDashboard(): Map<string, string> {
  const named = new Map<string, string>();
  for (const file of dashboardFiles(webSource)) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/(?:\ballows\([^,()]+,\s*|\bcan\(|\boperation:\s*)'([A-Za-z]+)'/g)) named.set(match[1]!, file);
  }
  return named;
}

describe("the dashboard's gates", () => {
  // A misspelt or renamed operationId would hide a page or a control from every member (the
  // server's allowed_operations never contain it) without failing anything else.
  it('name only operations the admin API has', () => {
    const known = new Set(createAdminRoutes({ allowPrivate: false }).map((route) => route.operationId));
    const named = operationsNamedByDashboard();
    expect(named.size).toBeGreaterThan(20);
    const unknown = [...named].filter(([operationId]) => !known.has(operationId)).map(([operationId, file]) => `${operationId} (${file})`);
    expect(unknown).toEqual([]);
  });

  it("open each page to a member's role: a page's operation is an organisation route with a role", () => {
    const routes = createAdminRoutes({ allowPrivate: false });
    const pageTable = readFileSync(join(webSource, 'pages/index.ts'), 'utf8');
    const pageOperations = [...pageTable.matchAll(/\boperation:\s*'([A-Za-z]+)'/g)].map((match) => match[1]!);
    expect(pageOperations.length).toBeGreaterThan(5);
    for (const operationId of pageOperations) {
      const route = routes.find((candidate) => candidate.operationId === operationId);
      expect({ operationId, access: route?.access, role: route?.role !== undefined }).toEqual({ operationId, access: 'organisation', role: true });
    }
  });
});
