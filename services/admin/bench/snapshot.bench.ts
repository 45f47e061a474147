/**
 * `pnpm bench snapshot`: the config push at scale. For 1,000 (the baseline) and 100,000
 * projects with one key each, seeded straight into a fresh PostgreSQL database, it starts the
 * admin and 3 real proxy processes and measures:
 *
 * - initial snapshot arrival + apply per proxy (proxies join one at a time): from the admin
 *   logging the proxy's hello to the proxy logging the applied config holding every seeded key
 *   (pino `time` of both lines);
 * - rotation round trip with 3 connected proxies: POST …/api-key-rotations until it returns
 *   (every proxy acknowledged), median and max over 20 rotations;
 * - proxy RSS without a snapshot (a proxy whose admin is not there) and with it; admin RSS.
 *
 * Correctness it owns (non-zero exit when broken): every rotation is acknowledged (no
 * `x-config-propagation: pending`), and right after each return the previous key is refused
 * (401) by all 3 proxies while the new one gets past authentication. Targets: < 3 s, < 500 ms.
 * Environment: TEST_DATABASE_URL (or the local server). Bounded to under 3 minutes.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { issueSecret } from '@gateway/secrets';
import { createTestDatabase, createTestPki, processRssMb, resolveTestInfrastructure, serviceTlsEnv, type TestDatabase } from '@gateway/testkit/outside-vitest';
import { migrate, openDatabase } from '@gateway/db';
import { freePort, startService, waitUntilReady, type ServiceProcess } from '../../../tests/support/service-processes.ts';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const migrationsDir = fileURLToPath(new URL('../migrations', import.meta.url));
const rotations = 20;
const proxyCount = 3;
const runDeadline = setTimeout(() => {
  process.stderr.write('snapshot bench: over its 170 s budget; giving up\n');
  process.exit(2);
}, 170_000);
runDeadline.unref();

/** Resident memory of a process now, MB. */
function rssMb(pid: number | undefined): number {
  return pid === undefined ? 0 : processRssMb(pid);
}

/** The pino lines a process printed, parsed. */
function logLines(service: ServiceProcess): Array<Record<string, unknown>> {
  return service.output().split('\n').filter((line) => line.startsWith('{')).flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}

async function until<T>(what: string, probe: () => T | undefined, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Seeds `projects` projects with one active key each (100 per organisation) and one model. */
async function seed(url: string, projects: number): Promise<void> {
  const db = await openDatabase({ url, schema: 'admin', poolSize: 1 });
  try {
    await migrate(db, migrationsDir);
    const organisations = Math.max(1, Math.ceil(projects / 100));
    await db.exec(`
      INSERT INTO gateway_models (slug, display_name, default_max_tokens, max_context_tokens, input_price_micros_per_mtok,
        output_price_micros_per_mtok, provider_input_cost_micros_per_mtok, provider_output_cost_micros_per_mtok,
        provider_kind, upstream_base_url, upstream_model)
      VALUES ('bench', 'Bench', 64, 4096, 1000000, 2000000, 0, 0, 'openai_compatible', 'http://127.0.0.1:9/v1', 'bench');
      INSERT INTO organisations (id, name, status, billing_mode, rpm_limit)
        SELECT 'org_' || lpad(to_hex(i), 24, '0'), 'Org ' || i, 'active', 'commercial', 600 FROM generate_series(1, ${organisations}) AS i;
      INSERT INTO organisation_allowed_models (organisation_id, gateway_model_slug)
        SELECT 'org_' || lpad(to_hex(i), 24, '0'), 'bench' FROM generate_series(1, ${organisations}) AS i;
      INSERT INTO projects (id, organisation_id, name, status)
        SELECT 'proj_' || lpad(to_hex(i), 24, '0'), 'org_' || lpad(to_hex((i - 1) / 100 + 1), 24, '0'), 'Project ' || i, 'active'
        FROM generate_series(1, ${projects}) AS i;
      INSERT INTO api_keys (id, project_id, key_hash, hint)
        SELECT 'key_' || lpad(to_hex(i), 24, '0'), 'proj_' || lpad(to_hex(i), 24, '0'), encode(sha256(('bench-key-' || i)::bytea), 'hex'), 'gwsk_…seed'
        FROM generate_series(1, ${projects}) AS i;
      UPDATE config_state SET version = version + 1, pruned_through = version + 1;
    `);
  } finally {
    await db.close();
  }
}

/** What one scale measured. */
interface ScaleResult {
  projects: number;
  snapshotApplyMs: number[];
  rotationMedianMs: number;
  rotationMaxMs: number;
  proxyRssNoSnapshotMb: number;
  proxyRssWithSnapshotMb: number[];
  adminRssMb: number;
  failures: string[];
}

async function chatStatus(proxyBase: string, apiKey: string): Promise<number> {
  const response = await fetch(`${proxyBase}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 }),
  });
  await response.arrayBuffer();
  return response.status;
}

async function measure(serverUrl: string, projects: number): Promise<ScaleResult> {
  const database: TestDatabase = await createTestDatabase(serverUrl);
  const services: ServiceProcess[] = [];
  const failures: string[] = [];
  try {
    await seed(database.url, projects);
    const adminToken = issueSecret('adminToken').secret;
    const [adminHttp, adminGrpc, deadLedger, deadAdmin, ...proxyPorts] = await Promise.all(Array.from({ length: 4 + proxyCount + 1 }, freePort));
    // Internal gRPC is mTLS, as in production (the handshake is part of what a proxy's join costs).
    const pki = await createTestPki();
    const admin = startService('admin', {
      ...serviceTlsEnv(pki, 'admin'),
      DATABASE_URL: database.url, LOG_LEVEL: 'info', BIND_HOST: '127.0.0.1',
      ADMIN_HTTP_PORT: String(adminHttp), ADMIN_METRICS_PORT: '0', ADMIN_GRPC_PORT: String(adminGrpc), LEDGER_GRPC_URL: `127.0.0.1:${deadLedger}`,
      ADMIN_ENCRYPTION_KEY: randomBytes(32).toString('base64'), ADMIN_BOOTSTRAP_TOKEN: adminToken, ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'true',
      SNAPSHOT_ACK_TIMEOUT_MS: '5000',
    });
    services.push(admin);
    await waitUntilReady(admin, `http://127.0.0.1:${adminHttp}/readyz`, 60_000);

    // A proxy with no admin to talk to: its memory without any snapshot.
    const lonelyPort = proxyPorts.pop()!;
    const lonely = startService('proxy', {
      ...serviceTlsEnv(pki, 'proxy'),
      LOG_LEVEL: 'warn', BIND_HOST: '127.0.0.1', PROXY_HTTP_PORT: String(lonelyPort), PROXY_METRICS_PORT: '0', PROXY_ID: 'bench-no-snapshot',
      ADMIN_GRPC_URL: `127.0.0.1:${deadAdmin}`, LEDGER_GRPC_URL: `127.0.0.1:${deadLedger}`,
    });
    services.push(lonely);
    await waitUntilReady({ ...lonely, name: 'proxy without admin' }, `http://127.0.0.1:${lonelyPort}/healthz`, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const proxyRssNoSnapshotMb = rssMb(lonely.child.pid);
    await lonely.stop();

    // One proxy joins at a time, as in a rolling deploy: each measurement is one proxy's snapshot,
    // not three proxies fighting over the machine's cores.
    const proxies: Array<{ proxy: ServiceProcess; base: string; id: string }> = [];
    const snapshotApplyMs: number[] = [];
    const timeOf = (line: Record<string, unknown> | undefined) => (line === undefined ? undefined : Date.parse(String(line.time)));
    for (const [index, port] of proxyPorts.entries()) {
      const id = `bench-proxy-${index}`;
      const proxy = startService('proxy', {
        ...serviceTlsEnv(pki, 'proxy'),
        LOG_LEVEL: 'info', BIND_HOST: '127.0.0.1', PROXY_HTTP_PORT: String(port), PROXY_METRICS_PORT: '0', PROXY_ID: id,
        ADMIN_GRPC_URL: `127.0.0.1:${adminGrpc}`, LEDGER_GRPC_URL: `127.0.0.1:${deadLedger}`, LEDGER_CALL_TIMEOUT_MS: '500',
      });
      services.push(proxy);
      const base = `http://127.0.0.1:${port}`;
      proxies.push({ proxy, base, id });
      await waitUntilReady(proxy, `${base}/readyz`, 60_000);
      const connectedAt = await until(`${id} hello`, () => timeOf(logLines(admin).find((line) => line.msg === 'proxy connected to the config stream' && line.proxyId === id)), 30_000);
      const appliedAt = await until(`${id} full config`, () => timeOf(logLines(proxy).find((line) => line.msg === 'config applied' && Number(line.keys) >= projects)), 60_000);
      snapshotApplyMs.push(appliedAt - connectedAt);
    }
    const proxyRssWithSnapshotMb = proxies.map(({ proxy }) => rssMb(proxy.child.pid));
    const adminRssMb = rssMb(admin.child.pid);

    // Rotations of seeded projects; each call must come back acknowledged by all 3 proxies.
    const durations: number[] = [];
    let previousKey: string | undefined;
    const projectId = (i: number) => `proj_${i.toString(16).padStart(24, '0')}`;
    for (let i = 0; i < rotations; i += 1) {
      // Every other rotation hits the same project again, so the key it replaces is one we know.
      const target = projectId(i % 2 === 0 ? 1 + i : i);
      const startedAt = performance.now();
      const response = await fetch(`http://127.0.0.1:${adminHttp}/admin/v1/projects/${target}/api-key-rotations`, {
        method: 'POST', headers: { authorization: `Bearer ${adminToken}` },
      });
      const body = await response.json() as { api_key?: string };
      durations.push(performance.now() - startedAt);
      if (response.status !== 201 || !body.api_key) {
        failures.push(`rotation ${i}: status ${response.status}`);
        continue;
      }
      if (response.headers.get('x-config-propagation') !== null) failures.push(`rotation ${i}: not acknowledged by every proxy`);
      if (i % 2 === 1 && previousKey !== undefined) {
        for (const { base, id } of proxies) {
          const oldStatus = await chatStatus(base, previousKey);
          const newStatus = await chatStatus(base, body.api_key);
          if (oldStatus !== 401) failures.push(`rotation ${i}: ${id} answered the replaced key with ${oldStatus}`);
          if (newStatus === 401) failures.push(`rotation ${i}: ${id} refused the new key`);
        }
      }
      previousKey = body.api_key;
    }
    const sorted = [...durations].sort((a, b) => a - b);
    return {
      projects, snapshotApplyMs, failures,
      rotationMedianMs: sorted[Math.floor(sorted.length / 2)]!, rotationMaxMs: sorted.at(-1)!,
      proxyRssNoSnapshotMb, proxyRssWithSnapshotMb, adminRssMb,
    };
  } finally {
    for (const service of [...services].reverse()) await service.stop();
    await database.drop();
  }
}

const infrastructure = await resolveTestInfrastructure();
if (!infrastructure.postgresUrl) throw new Error(`snapshot bench needs PostgreSQL: ${infrastructure.problems.join('; ')}`);
const baseline = await measure(infrastructure.postgresUrl, 1_000);
const scaled = await measure(infrastructure.postgresUrl, 100_000);
await infrastructure.stop();

const round = (value: number) => Math.round(value * 10) / 10;
const maxApplyMs = (result: ScaleResult) => Math.max(...result.snapshotApplyMs);
const rows = [baseline, scaled].map((result) => ({
  projects: result.projects,
  'snapshot arrive+apply, ms (per proxy)': result.snapshotApplyMs.map(round).join(' / '),
  'rotation p50, ms': round(result.rotationMedianMs),
  'rotation max, ms': round(result.rotationMaxMs),
  'proxy RSS no snapshot → with, MB': `${result.proxyRssNoSnapshotMb} → ${result.proxyRssWithSnapshotMb.join(' / ')}`,
  'admin RSS, MB': result.adminRssMb,
}));
console.table(rows);
const ratios = {
  snapshotApply: round(maxApplyMs(scaled) / Math.max(1, maxApplyMs(baseline))),
  rotationMedian: round(scaled.rotationMedianMs / Math.max(1, baseline.rotationMedianMs)),
};
const targets = { snapshotApplyMs: 3_000, rotationMs: 500 };
const targetsMet = { snapshotApply: maxApplyMs(scaled) < targets.snapshotApplyMs, rotationMax: scaled.rotationMaxMs < targets.rotationMs };
console.log(`100k vs 1k: snapshot ×${ratios.snapshotApply}, rotation p50 ×${ratios.rotationMedian}; `
  + `targets (< ${targets.snapshotApplyMs} ms, < ${targets.rotationMs} ms): snapshot ${targetsMet.snapshotApply ? 'met' : 'MISSED'}, rotation max ${targetsMet.rotationMax ? 'met' : 'MISSED'}`);
mkdirSync(`${repoRoot}bench-results`, { recursive: true });
writeFileSync(`${repoRoot}bench-results/snapshot.json`, `${JSON.stringify({ baseline, scaled, ratios, targets, targetsMet }, null, 2)}\n`);
const failures = [...baseline.failures, ...scaled.failures];
if (failures.length > 0) {
  console.error(`correctness checks failed:\n${failures.map((failure) => `  - ${failure}`).join('\n')}`);
  process.exit(1);
}
