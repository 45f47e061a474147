import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../', import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), 'gw-start-all-'));
const quietDataDir = mkdtempSync(join(tmpdir(), 'gw-start-all-quiet-'));
afterAll(() => {
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(quietDataDir, { recursive: true, force: true });
});

describe('the README start command (scripts/start-all.ts)', () => {
  it('stops every service cleanly when Ctrl-C arrives twice in a row (the terminal and pnpm each send SIGINT)', async () => {
    // Embedded everything: no DATABASE_URL or REDIS_URL, any free ports.
    const { DATABASE_URL: _database, REDIS_URL: _redis, ...inherited } = process.env;
    const child = spawn(process.execPath, [join(repoRoot, 'scripts/start-all.ts')], {
      cwd: repoRoot,
      env: { ...inherited, DATA_DIR: dataDir, PROXY_HTTP_PORT: '0', PROXY_METRICS_PORT: '0', ADMIN_HTTP_PORT: '0', ADMIN_METRICS_PORT: '0', DEMO_UPSTREAM_PORT: '0', LOCAL_PAYMENTS_PORT: '0', LOG_LEVEL: 'info', SHUTDOWN_GRACE_MS: '3000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

    await expect.poll(() => output, { timeout: 80_000, interval: 100 }).toContain('The gateway is running.');
    // A request still arriving (its body half sent) keeps the admin draining for its grace, so the
    // second signal lands while the stop is under way, as it does when requests are in flight.
    const adminPort = Number(/Admin API: +http:\/\/127\.0\.0\.1:(\d+)\//.exec(output)![1]);
    const slowClient = connect(adminPort, '127.0.0.1');
    slowClient.on('error', () => {});
    await new Promise<void>((resolve) => slowClient.once('connect', () => {
      slowClient.write('POST /slow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{', () => resolve());
    }));
    // One answered round trip after it: the admin has read the half request by now.
    expect((await fetch(`http://127.0.0.1:${adminPort}/healthz`)).status).toBe(200);
    child.kill('SIGINT');
    // The second copy arrives once the first is being handled (two at the same instant merge in the kernel).
    await expect.poll(() => output, { timeout: 10_000, interval: 10 }).toContain('SIGINT: stopping');
    child.kill('SIGINT');

    expect(await exited, output.slice(-2_000)).toBe(0);
    for (const service of ['proxy', 'admin', 'ledger']) expect(output).toContain(`"msg":"${service} stopped"`);
    expect(output).not.toContain('exiting now');
  }, 120_000);
  it('prints the banner last and keeps it in view: no per-request lines, no DEP0123, the proxy\'s address known to the dashboard', async () => {
    // As a person runs it: LOG_LEVEL unset.
    const { DATABASE_URL: _database, REDIS_URL: _redis, LOG_LEVEL: _level, ...inherited } = process.env;
    const child = spawn(process.execPath, [join(repoRoot, 'scripts/start-all.ts')], {
      cwd: repoRoot,
      env: { ...inherited, DATA_DIR: quietDataDir, PROXY_HTTP_PORT: '0', PROXY_METRICS_PORT: '0', ADMIN_HTTP_PORT: '0', ADMIN_METRICS_PORT: '0', DEMO_UPSTREAM_PORT: '0', LOCAL_PAYMENTS_PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await expect.poll(() => output, { timeout: 80_000, interval: 100 }).toContain('Stop with Ctrl-C.');
      const adminApi = /Admin API: +(http:\/\/127\.0\.0\.1:\d+\/admin\/v1)/.exec(output)![1]!;
      const proxyApi = /OpenAI-compatible API: +(http:\/\/127\.0\.0\.1:\d+\/v1)/.exec(output)![1]!;
      const token = /export GATEWAY_ADMIN_TOKEN=(\S+)/.exec(output)![1]!;
      // The banner's own suggestion works, and allows both demo models the README uses.
      const suggested = /-d '(\{"name":"Acme".*\})'/.exec(output)![1]!;
      expect(JSON.parse(suggested).allowed_gateway_models).toEqual(['demo', 'demo-embedding']);
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      const organisation = await fetch(`${adminApi}/organisations`, { method: 'POST', headers, body: suggested });
      expect(organisation.status).toBe(201);
      const { id } = await organisation.json() as { id: string };
      const models = await fetch(`${adminApi}/organisations/${id}/models`, { headers });
      const listed = await models.json() as { api_base_url: string; data: Array<{ slug: string }> };
      expect(listed.api_base_url).toBe(proxyApi);
      expect(listed.data.map((model) => model.slug)).toEqual(['demo', 'demo-embedding']);
      for (let i = 0; i < 5; i += 1) expect((await fetch(`${adminApi}/organisations/${id}`, { headers })).status).toBe(200);
      // A 404 is an access line at info too: not printed either.
      expect((await fetch(`${adminApi}/organisations/org_nope`, { headers })).status).toBe(404);
      const afterBanner = output.slice(output.indexOf('Stop with Ctrl-C.'));
      expect(afterBanner).not.toContain('"msg":"request"');
      expect(output).not.toContain('"msg":"request"');
      expect(output).not.toContain('DEP0123');
      expect(output).not.toMatch(/DeprecationWarning/);
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited, output.slice(-2_000)).toBe(0);
  }, 120_000);
});
