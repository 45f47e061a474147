/**
 * `pnpm bench [filter]`: runs every benchmark of the workspace (`services/<name>/bench/*.bench.ts`
 * and `bench/*.bench.ts`), one process each and one after another, so they do not compete for
 * the machine's cores. A benchmark prints its own table, writes `bench-results/<name>.json`, and
 * exits non-zero when a check it owns fails (e.g. the ledger's verify after the run).
 * Benchmarks use PostgreSQL and Redis from TEST_DATABASE_URL / DATABASE_URL and TEST_REDIS_URL /
 * REDIS_URL, or the conventional local addresses.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../', import.meta.url));
const filter = process.argv[2];

function benchFilesIn(directory: string): string[] {
  if (!existsSync(directory)) return [];
  return readdirSync(directory).filter((f) => f.endsWith('.bench.ts')).map((f) => join(directory, f));
}

const files = [
  ...readdirSync(join(repoRoot, 'services')).flatMap((service) => benchFilesIn(join(repoRoot, 'services', service, 'bench'))),
  ...benchFilesIn(join(repoRoot, 'bench')),
  // Matched on the path inside the checkout: a checkout's own folder name (e.g. wt-soak) must not select every benchmark.
].filter((file) => !filter || relative(repoRoot, file).includes(filter)).sort();

if (files.length === 0) {
  process.stderr.write(`no benchmark matches ${filter ?? '(any)'}\n`);
  process.exit(1);
}

const failures: string[] = [];
for (const file of files) {
  const name = relative(repoRoot, file);
  process.stdout.write(`\n=== ${name}\n`);
  const result = spawnSync(process.execPath, [file], { cwd: repoRoot, stdio: 'inherit', env: process.env });
  if (result.status !== 0) failures.push(`${name} (exit ${result.status ?? result.signal})`);
}
if (failures.length > 0) {
  process.stderr.write(`\nbenchmarks failed:\n${failures.map((f) => `  - ${f}`).join('\n')}\n`);
  process.exit(1);
}
