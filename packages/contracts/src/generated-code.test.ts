import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const committedDir = join(repoRoot, 'packages/contracts/src/gen');

function listFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? listFiles(path) : [path];
  });
}

describe('generated contracts', () => {
  const outDir = mkdtempSync(join(tmpdir(), 'gateway-gen-'));
  afterAll(() => rmSync(outDir, { recursive: true, force: true }));

  it('match what `pnpm gen` would produce from proto/', () => {
    // buf prepends --output to the template's `out`, so the fresh copy lands under outDir.
    execFileSync(join(repoRoot, 'node_modules/.bin/buf'), ['generate', '--output', outDir], { cwd: repoRoot });
    const freshDir = join(outDir, 'packages/contracts/src/gen');
    const fresh = listFiles(freshDir).map((f) => relative(freshDir, f)).sort();
    const committed = listFiles(committedDir).map((f) => relative(committedDir, f)).sort();
    expect(committed).toEqual(fresh);
    for (const file of fresh) {
      expect(readFileSync(join(committedDir, file), 'utf8'), `${file} is stale: run pnpm gen`).toBe(
        readFileSync(join(freshDir, file), 'utf8'),
      );
    }
  });
});
