/**
 * `pnpm bench soak`: whether the gateway sustains what it admits. An 8-second run hides a ledger
 * that settles more slowly than the proxy admits (the settle outbox fills over minutes, then the
 * proxy answers 503) and memory that grows and stays (issue 30). This runs the gateway for
 * BENCH_SOAK_MINUTES under steady load, half the connections non-streaming and half streaming,
 * then lets it idle, and samples every BENCH_SOAK_SAMPLE_S: answered requests per second, 503s
 * and other failures, the proxy's settle outbox (depth and oldest entry's age, from its metrics)
 * and resident memory (VmRSS).
 *
 * Topologies (BENCH_SOAK_TOPOLOGY: `separate`, `combined` or `both`, the default): `separate` runs
 * the ledger, admin and proxy as their own processes (the proxy with its manifest's NODE_OPTIONS)
 * with the fake upstream as another; `combined` is `pnpm start` (scripts/start-all.ts: every
 * service and the demo upstream in one process). Both use a fresh database on the real
 * PostgreSQL (TEST_DATABASE_URL) and the real Redis (TEST_REDIS_URL), so they measure the same
 * database.
 *
 * Verdict, per topology: the outbox is **bounded** when its mean sampled depth over the last
 * third of the load (the warm-up sample left out) is no more than over the first third plus 1%
 * of its bound (PROXY_SETTLE_OUTBOX_MAX, 10,000), or no more than the depth from which the proxy
 * paces new requests by the ledger's answers (a tenth of the bound): a ledger that keeps up
 * holds the depth level (each sample is one moment of a depth that moves by batches), a slower
 * one holds it at the pacing depth, and without pacing it climbs by thousands to the bound. **No 503** may be answered (the ledger is healthy throughout). Memory
 * is reported (after the first sample, peak, end of idle), not judged: the issue's bound is
 * for the gateway bench's load. After the idle the outbox must be empty and the ledger must
 * verify (CONSERVATION per organisation and grant). The process exits 1 when a verdict fails,
 * after printing everything; results go to bench-results/soak.json.
 *
 * Environment: BENCH_SOAK_MINUTES (default 10; fractions allowed), BENCH_SOAK_IDLE_S (60),
 * BENCH_SOAK_SAMPLE_S (10), BENCH_SOAK_CONNECTIONS (16), BENCH_SOAK_TOPOLOGY, TEST_DATABASE_URL,
 * TEST_REDIS_URL, BENCH_SOAK_COMBINED_NODE_OPTIONS (Node flags for `combined`'s process, to profile it:
 * `--heapsnapshot-signal=SIGUSR2`, or a heap cap to tell garbage V8 has not collected from a leak).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { openDatabase } from '@gateway/db';
import { findBalanceDifferences } from '@gateway/ledger';
import { issueSecret } from '@gateway/secrets';
import { scrapeMetrics, sumSamples } from '@gateway/testkit';
import { createTestDatabase, createTestPki, processRssMb, resolveTestInfrastructure, serviceTlsEnv, startServiceProcess } from '@gateway/testkit/outside-vitest';
import { freePort, startService, waitUntilReady, type ServiceProcess } from '../tests/support/service-processes.ts';
import { deployedProxyEnv } from './support/deployed-proxy-env.ts';
import { startHelper } from './support/proxy-process.ts';

const repoRoot = fileURLToPath(new URL('../', import.meta.url));
const loadS = Math.round(Number(process.env.BENCH_SOAK_MINUTES ?? 10) * 60);
const idleS = Number(process.env.BENCH_SOAK_IDLE_S ?? 60);
const sampleS = Number(process.env.BENCH_SOAK_SAMPLE_S ?? 10);
const connections = Math.max(2, Number(process.env.BENCH_SOAK_CONNECTIONS ?? 16));
const topologyChoice = process.env.BENCH_SOAK_TOPOLOGY ?? 'both';
const topologies = topologyChoice === 'both' ? ['separate', 'combined'] as const : [topologyChoice as 'separate' | 'combined'];
/** The proxy's PROXY_SETTLE_OUTBOX_MAX (its default): the bounded rule allows 1% of it. */
const outboxBound = 10_000;
/**
 * The depth from which the proxy paces new requests by the ledger's answers (a tenth of the
 * bound, ledger/settle-outbox.ts): a ledger slower than the load holds the outbox there, level.
 */
const outboxPacingDepth = outboxBound / 10;
/** Node flags for `pnpm start`'s one process (BENCH_SOAK_COMBINED_NODE_OPTIONS, e.g. `--heapsnapshot-signal=SIGUSR2`); unset: none, as `pnpm start` runs. */
const combinedNodeOptions = process.env.BENCH_SOAK_COMBINED_NODE_OPTIONS;
const proxyNodeOptions = deployedProxyEnv().nodeOptions;
const bodies = {
  'non-streaming': (model: string) => ({ model, max_tokens: 64, messages: [{ role: 'user', content: 'Soak request [[fake:reply_words=16]]' }] }),
  streaming: (model: string) => ({ model, max_tokens: 128, stream: true, messages: [{ role: 'user', content: 'Soak stream [[fake:reply_words=64]]' }] }),
};

/** A running gateway as the soak drives it. */
interface Gateway {
  /** POST target of chat completions. */
  completionsUrl: string;
  apiKey: string;
  model: string;
  organisationId: string;
  /** The proxy's Prometheus endpoint. */
  metricsUrl: string;
  /** The process whose memory is the proxy's (in `combined`, every service's). */
  proxyPid: number;
  stop(): Promise<void>;
}

/** One sample of the soak. */
interface Sample {
  /** Seconds since the load started. */
  atS: number;
  phase: 'load' | 'idle';
  /** Answered (2xx) per second over the interval. */
  rps: number;
  unavailable503: number;
  otherFailures: number;
  outboxDepth: number;
  outboxOldestAgeS: number;
  rssMb: number;
}

/** Calls the admin API with the platform-admin token; throws on a non-2xx. */
async function adminCall(adminUrl: string, token: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Record<string, any>> {
  const response = await fetch(`${adminUrl}${path}`, {
    method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json() as Record<string, any>;
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

/** An organisation credited far beyond the soak's spend, allowed `model`, with a project and its key. */
async function customer(adminUrl: string, token: string, model: string): Promise<{ organisationId: string; apiKey: string }> {
  const organisation = await adminCall(adminUrl, token, 'POST', '/organisations', { name: 'Soak', rpm_limit: 1_000_000, allowed_gateway_models: [model] });
  await adminCall(adminUrl, token, 'POST', `/organisations/${organisation.id}/credits`, { amount_micros: '100000000000000', reason: 'soak' }, { 'idempotency-key': `soak-${organisation.id}` });
  const { api_key: apiKey } = await adminCall(adminUrl, token, 'POST', `/organisations/${organisation.id}/projects`, { name: 'soak' });
  return { organisationId: organisation.id as string, apiKey: apiKey as string };
}

/** The three services as their own processes, as deployed, over `databaseUrl` and `redisUrl`. */
async function startSeparate(databaseUrl: string, redisUrl: string): Promise<Gateway> {
  const processes: ServiceProcess[] = [];
  const upstream = await startHelper('bench/support/fake-upstream-process.ts');
  const stop = async () => {
    for (const service of processes.reverse()) await service.stop();
    upstream.child.kill('SIGTERM');
  };
  try {
    const token = issueSecret('adminToken').secret;
    const [ledgerGrpc, ledgerHttp, adminHttp, adminGrpc, proxyHttp, proxyMetrics] = await Promise.all(Array.from({ length: 6 }, freePort)) as [number, number, number, number, number, number];
    const pki = await createTestPki();
    const common = { DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', BIND_HOST: '127.0.0.1' };
    const ledger = startService('ledger', { ...common, ...serviceTlsEnv(pki, 'ledger'), LEDGER_GRPC_PORT: String(ledgerGrpc), LEDGER_HTTP_PORT: String(ledgerHttp), LEDGER_METRICS_PORT: '0' });
    processes.push(ledger);
    await waitUntilReady(ledger, `http://127.0.0.1:${ledgerHttp}/readyz`);
    const admin = startService('admin', {
      ...common, ...serviceTlsEnv(pki, 'admin'), ADMIN_HTTP_PORT: String(adminHttp), ADMIN_METRICS_PORT: '0', ADMIN_GRPC_PORT: String(adminGrpc),
      LEDGER_GRPC_URL: `127.0.0.1:${ledgerGrpc}`, ADMIN_ENCRYPTION_KEY: randomBytes(32).toString('base64'), ADMIN_BOOTSTRAP_TOKEN: token, ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'true',
    });
    processes.push(admin);
    await waitUntilReady(admin, `http://127.0.0.1:${adminHttp}/readyz`);
    const proxy = startService('proxy', {
      ...serviceTlsEnv(pki, 'proxy'), LOG_LEVEL: 'warn', BIND_HOST: '127.0.0.1', PROXY_HTTP_PORT: String(proxyHttp), PROXY_METRICS_PORT: String(proxyMetrics),
      PROXY_ID: 'soak-proxy', ADMIN_GRPC_URL: `127.0.0.1:${adminGrpc}`, LEDGER_GRPC_URL: `127.0.0.1:${ledgerGrpc}`,
      REDIS_URL: redisUrl, PROXY_REDIS_PREFIX: `soak:${randomBytes(4).toString('hex')}:`, NODE_OPTIONS: proxyNodeOptions,
    });
    processes.push(proxy);
    await waitUntilReady(proxy, `http://127.0.0.1:${proxyHttp}/readyz`);
    const adminUrl = `http://127.0.0.1:${adminHttp}/admin/v1`;
    await adminCall(adminUrl, token, 'POST', '/gateway-models', {
      slug: 'soak', default_max_tokens: 128, max_context_tokens: 8192, input_price_micros_per_mtok: '150000000', output_price_micros_per_mtok: '600000000',
      upstream: { provider_kind: 'openai_compatible', base_url: `http://127.0.0.1:${upstream.port}/v1`, model: 'soak-upstream' },
    });
    const { organisationId, apiKey } = await customer(adminUrl, token, 'soak');
    return {
      completionsUrl: `http://127.0.0.1:${proxyHttp}/v1/chat/completions`, apiKey, model: 'soak', organisationId,
      metricsUrl: `http://127.0.0.1:${proxyMetrics}/metrics`, proxyPid: proxy.child.pid!, stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** `pnpm start` (scripts/start-all.ts, every service in one process) over `databaseUrl` and `redisUrl`. */
async function startCombined(databaseUrl: string, redisUrl: string): Promise<Gateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-soak-'));
  const token = issueSecret('adminToken').secret;
  const [proxyHttp, proxyMetrics, adminHttp, demoUpstream, localPayments] = await Promise.all(Array.from({ length: 5 }, freePort)) as [number, number, number, number, number];
  const gateway = startServiceProcess('gateway', 'scripts/start-all.ts', {
    DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, DATA_DIR: dataDir, LOG_LEVEL: 'warn', ADMIN_BOOTSTRAP_TOKEN: token,
    PROXY_HTTP_PORT: String(proxyHttp), PROXY_METRICS_PORT: String(proxyMetrics), ADMIN_HTTP_PORT: String(adminHttp),
    DEMO_UPSTREAM_PORT: String(demoUpstream), LOCAL_PAYMENTS_PORT: String(localPayments),
    ...(combinedNodeOptions === undefined ? {} : { NODE_OPTIONS: combinedNodeOptions }),
  }, repoRoot);
  const stop = async () => {
    await gateway.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await waitUntilReady(gateway, `http://127.0.0.1:${proxyHttp}/readyz`);
    // pnpm start makes the demo model; the soak bills it like any other.
    const { organisationId, apiKey } = await customer(`http://127.0.0.1:${adminHttp}/admin/v1`, token, 'demo');
    return {
      completionsUrl: `http://127.0.0.1:${proxyHttp}/v1/chat/completions`, apiKey, model: 'demo', organisationId,
      metricsUrl: `http://127.0.0.1:${proxyMetrics}/metrics`, proxyPid: gateway.child.pid!, stop,
    };
  } catch (error) {
    process.stderr.write(gateway.output());
    await stop();
    throw error;
  }
}

/** Counts of answers by kind since the last take. */
class AnswerCounts {
  ok = 0;
  unavailable503 = 0;
  other = 0;
  /** The counts so far, and zero again. */
  take(): { ok: number; unavailable503: number; other: number } {
    const taken = { ok: this.ok, unavailable503: this.unavailable503, other: this.other };
    this.ok = 0;
    this.unavailable503 = 0;
    this.other = 0;
    return taken;
  }
}

/** Drives `gateway` for loadS, then idles for idleS, sampling every sampleS. */
async function soak(gateway: Gateway, topology: string): Promise<Sample[]> {
  const counts = new AnswerCounts();
  const startedAtMs = performance.now();
  const instances = (['non-streaming', 'streaming'] as const).map((mode) => {
    return new Promise<void>((resolve, reject) => {
      const instance = autocannon({
        url: gateway.completionsUrl, method: 'POST', connections: connections / 2, pipelining: 1, duration: loadS, timeout: 60,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.apiKey}` }, body: JSON.stringify(bodies[mode](gateway.model)),
      }, (error) => { if (error) reject(error); else resolve(); });
      instance.on('response', (_client, statusCode) => {
        if (statusCode >= 200 && statusCode < 300) counts.ok += 1;
        else if (statusCode === 503) counts.unavailable503 += 1;
        else counts.other += 1;
      });
      instance.on('reqError', () => { counts.other += 1; });
    });
  });
  let loadOver = false;
  void Promise.all(instances).then(() => { loadOver = true; });
  const samples: Sample[] = [];
  let lastAtMs = startedAtMs;
  const endAtMs = startedAtMs + (loadS + idleS) * 1000;
  while (performance.now() < endAtMs) {
    await new Promise((resolve) => setTimeout(resolve, Math.min(sampleS * 1000, Math.max(0, endAtMs - performance.now()))));
    const nowMs = performance.now();
    const taken = counts.take();
    const metrics = await scrapeMetrics(gateway.metricsUrl);
    const sample: Sample = {
      atS: Math.round((nowMs - startedAtMs) / 1000), phase: loadOver ? 'idle' : 'load',
      rps: Math.round(taken.ok / ((nowMs - lastAtMs) / 1000)), unavailable503: taken.unavailable503, otherFailures: taken.other,
      outboxDepth: sumSamples(metrics, 'gateway_proxy_settle_outbox_depth'),
      outboxOldestAgeS: Number(sumSamples(metrics, 'gateway_proxy_settle_outbox_oldest_age_seconds').toFixed(1)),
      rssMb: processRssMb(gateway.proxyPid),
    };
    lastAtMs = nowMs;
    samples.push(sample);
    process.stdout.write(`${topology.padEnd(9)} ${String(sample.atS).padStart(5)} s  ${sample.phase.padEnd(4)}  ${String(sample.rps).padStart(5)} req/s  503s ${sample.unavailable503}  other ${sample.otherFailures}  outbox ${sample.outboxDepth} (oldest ${sample.outboxOldestAgeS} s)  RSS ${sample.rssMb} MB\n`);
  }
  await Promise.all(instances);
  return samples;
}

/** The soak's verdict and figures for one topology. */
interface Summary {
  topology: string;
  sustainedRps: number;
  total503: number;
  totalOtherFailures: number;
  outboxMax: number;
  /** Mean sampled depth over the first third of the load after the warm-up sample. */
  outboxFirstThirdMean: number;
  /** Mean sampled depth over the last third of the load. */
  outboxLastThirdMean: number;
  outboxBounded: boolean;
  rssAfterWarmUpMb: number;
  rssPeakMb: number;
  rssEndOfIdleMb: number;
  ledgerDifferences: number;
  outboxDrained: boolean;
}

/** Summarises the samples (the first one is the warm-up) and checks the ledger afterwards. */
async function summarise(topology: string, samples: Sample[], databaseUrl: string): Promise<Summary> {
  const load = samples.filter((sample) => sample.phase === 'load');
  const measured = load.slice(1);
  const third = Math.max(1, Math.floor(measured.length / 3));
  const maxOf = (list: Sample[]) => Math.max(0, ...list.map((sample) => sample.outboxDepth));
  const meanOf = (list: Sample[]) => Math.round(list.reduce((sum, sample) => sum + sample.outboxDepth, 0) / Math.max(1, list.length));
  const firstThirdMean = meanOf(measured.slice(0, third));
  const lastThirdMean = meanOf(measured.slice(-third));
  const ledgerDb = await openDatabase({ url: databaseUrl, schema: 'ledger', poolSize: 1 });
  let differences: number;
  try {
    differences = (await findBalanceDifferences(ledgerDb)).length;
  } finally {
    await ledgerDb.close();
  }
  return {
    topology,
    sustainedRps: Math.round(measured.reduce((sum, sample) => sum + sample.rps, 0) / Math.max(1, measured.length)),
    total503: samples.reduce((sum, sample) => sum + sample.unavailable503, 0),
    totalOtherFailures: samples.reduce((sum, sample) => sum + sample.otherFailures, 0),
    outboxMax: maxOf(samples), outboxFirstThirdMean: firstThirdMean, outboxLastThirdMean: lastThirdMean,
    outboxBounded: lastThirdMean <= Math.max(firstThirdMean + outboxBound / 100, outboxPacingDepth),
    rssAfterWarmUpMb: samples[0]?.rssMb ?? 0, rssPeakMb: Math.max(0, ...samples.map((sample) => sample.rssMb)), rssEndOfIdleMb: samples.at(-1)?.rssMb ?? 0,
    ledgerDifferences: differences, outboxDrained: (samples.at(-1)?.outboxDepth ?? 1) === 0,
  };
}

async function main(): Promise<boolean> {
  const infrastructure = await resolveTestInfrastructure();
  if (!infrastructure.postgresUrl || !infrastructure.redisUrl) throw new Error(`the soak needs PostgreSQL and Redis: ${infrastructure.problems.join('; ')}`);
  process.stdout.write(`soak: ${loadS} s of load at ${connections} connections (half streaming), then ${idleS} s idle, a sample every ${sampleS} s; topologies ${topologies.join(', ')}\n`);
  const summaries: Summary[] = [];
  const allSamples: Record<string, Sample[]> = {};
  for (const topology of topologies) {
    const database = await createTestDatabase(infrastructure.postgresUrl);
    try {
      const gateway = topology === 'separate' ? await startSeparate(database.url, infrastructure.redisUrl) : await startCombined(database.url, infrastructure.redisUrl);
      try {
        allSamples[topology] = await soak(gateway, topology);
      } finally {
        await gateway.stop();
      }
      summaries.push(await summarise(topology, allSamples[topology]!, database.url));
    } finally {
      await database.drop();
    }
  }
  let passed = true;
  for (const summary of summaries) {
    const verdicts = [
      summary.outboxBounded ? 'outbox bounded' : 'OUTBOX CLIMBED', summary.total503 === 0 ? 'no 503' : `${summary.total503} 503s`,
      summary.outboxDrained ? 'outbox drained' : 'OUTBOX NOT DRAINED', summary.ledgerDifferences === 0 ? 'ledger verifies' : `${summary.ledgerDifferences} LEDGER DIFFERENCES`,
    ];
    passed &&= summary.outboxBounded && summary.total503 === 0 && summary.outboxDrained && summary.ledgerDifferences === 0;
    process.stdout.write(`${summary.topology}: sustained ${summary.sustainedRps} req/s; outbox max ${summary.outboxMax} (mean over the first third ${summary.outboxFirstThirdMean}, over the last third ${summary.outboxLastThirdMean}); other failures ${summary.totalOtherFailures}; RSS after warm-up ${summary.rssAfterWarmUpMb} MB, peak ${summary.rssPeakMb} MB, end of idle ${summary.rssEndOfIdleMb} MB; ${verdicts.join(', ')}\n`);
  }
  mkdirSync(`${repoRoot}bench-results`, { recursive: true });
  writeFileSync(`${repoRoot}bench-results/soak.json`, `${JSON.stringify({ date: new Date().toISOString(), loadS, idleS, sampleS, connections, summaries, samples: allSamples }, null, 2)}\n`);
  return passed;
}

process.exit(await main() ? 0 : 1);
