/**
 * `npx -y pnpm@12 bench failover`: what failing over between upstream deployments costs a request
 * (issue 29; docs/proxy.md "Routing"). The proxy runs as its own process with the manifest's Node
 * flags, wired to the in-memory ledger and config peers of its tests (real gRPC with mTLS) and to
 * the fake upstream (its own process) as the healthy deployment; the failing deployments are tiny
 * servers in this process: one answering 429 at once, one 503 at once, one that accepts the
 * request and never answers. Requests go one at a time (c=1) so each latency is one request's,
 * timed here in microseconds:
 *   baseline   a slug with one healthy deployment (the proxy as before routing);
 *   429, 503   the first deployment refuses at once, the second answers;
 *   hang       the first deployment never answers: the attempt times out after
 *              PROXY_ROUTING_ATTEMPT_TIMEOUT_MS (BENCH_ATTEMPT_TIMEOUT_MS, 200 ms here) and the second answers;
 *   ejected    a second proxy with PROXY_OUTLIER_CONSECUTIVE_FAILURES=1: the first 503 ejects the
 *              failing deployment, and the requests after it go straight to the healthy one
 *              (its ratio is to the baseline measured on that second proxy).
 * In the first proxy ejection is held off (1,000 consecutive failures), so every request of the
 * 429/503/hang rows really tries the failing deployment first. Each row gives p50 and p99 and the
 * ratio of its p50 to the baseline's in the same run. The run fails if any answer is not a 200 or
 * the ejected row's failing deployment saw more than its one request.
 *
 * Environment: BENCH_REQUESTS (400 per fast row), BENCH_HANG_REQUESTS (20), BENCH_ATTEMPT_TIMEOUT_MS (200).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { serviceTlsEnv, sharedTestPki } from '@gateway/testkit';
import { startConfigPeer } from '../services/proxy/src/test-support/config-peer.ts';
import { startLedgerPeer } from '../services/proxy/src/test-support/ledger-peer.ts';
import { gatewayDeployment, gatewayModel, stateOf, tenant } from '../services/proxy/src/test-support/proxy-world.ts';
import { deployedProxyEnv } from './support/deployed-proxy-env.ts';
import { startHelper, waitForReady } from './support/proxy-process.ts';

const repoRoot = fileURLToPath(new URL('../', import.meta.url));
const fastRequests = Number(process.env.BENCH_REQUESTS ?? 400);
const hangRequests = Number(process.env.BENCH_HANG_REQUESTS ?? 20);
const attemptTimeoutMs = Number(process.env.BENCH_ATTEMPT_TIMEOUT_MS ?? 200);
const deployedNodeOptions = deployedProxyEnv().nodeOptions;

/** A failing deployment: answers every request with `status` at once, or (status 0) never; counts what it saw. */
async function startFailing(status: number): Promise<{ server: Server; url: string; seen: () => number }> {
  let seen = 0;
  const server = createServer((request, response) => {
    seen += 1;
    request.resume();
    if (status === 0) return; // holds the request until the proxy gives up on it
    request.on('end', () => {
      response.writeHead(status, { 'content-type': 'application/json', 'x-upstream-vendor': 'failing-vendor' })
        .end(JSON.stringify({ error: { message: `failing-vendor says ${status}` } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, seen: () => seen };
}

/** Starts a proxy process on these peers with extra environment; resolves with it and its port. */
async function startProxy(adminAddress: string, ledgerAddress: string, env: Record<string, string>): Promise<{ proxy: ChildProcess; port: number }> {
  const port = 20_000 + Math.floor(Math.random() * 12_000);
  const proxy = spawn(process.execPath, ['services/proxy/src/main.ts'], {
    cwd: repoRoot,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      PATH: process.env.PATH ?? '', ...serviceTlsEnv(await sharedTestPki(), 'proxy'), NODE_OPTIONS: deployedNodeOptions,
      LOG_LEVEL: 'warn', BIND_HOST: '127.0.0.1', PROXY_HTTP_PORT: String(port), PROXY_METRICS_PORT: '0', PROXY_ID: `bench-failover-${port}`,
      ADMIN_GRPC_URL: adminAddress, LEDGER_GRPC_URL: ledgerAddress, ...env,
    },
  });
  await waitForReady(`http://127.0.0.1:${port}/readyz`, proxy);
  return { proxy, port };
}

/** Sends `count` chat completions of `model` one at a time; each one's latency, µs. Throws on an answer that is not a 200. */
async function latenciesUs(port: number, apiKey: string, model: string, count: number): Promise<number[]> {
  const body = JSON.stringify({ model, messages: [{ role: 'user', content: 'Benchmark request [[fake:reply_words=16]]' }] });
  const out: number[] = [];
  for (let index = 0; index < count; index += 1) {
    const started = process.hrtime.bigint();
    const response = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` }, body,
    });
    const text = await response.text();
    out.push(Number((process.hrtime.bigint() - started) / 1000n));
    if (response.status !== 200) throw new Error(`${model}: answer ${response.status} ${text.slice(0, 200)}`);
    if (text.includes('failing-vendor')) throw new Error(`${model}: a failing deployment's text reached the client`);
  }
  return out;
}

/** The q-quantile of some latencies (nearest rank), µs. */
function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

async function main(): Promise<void> {
  const healthy = await startHelper('bench/support/fake-upstream-process.ts');
  const healthyUrl = `http://127.0.0.1:${healthy.port}/v1`;
  const [refuse429, refuse503, hang, ejectable] = await Promise.all([startFailing(429), startFailing(503), startFailing(0), startFailing(503)]);
  const ledger = await startLedgerPeer();
  const slugs = ['baseline', 'refuse-429', 'refuse-503', 'hang', 'ejected'];
  const buyer = tenant('org-bench', { rpmLimit: 1_000_000_000, allowedGatewayModelSlugs: slugs });
  /** A slug whose first deployment fails as `failing` does and whose second is the healthy one. */
  const failingFirst = (slug: string, failingUrl: string) => gatewayModel(slug, failingUrl, {
    defaultMaxTokens: 128,
    deployments: [
      gatewayDeployment('primary', failingUrl, { priority: 0 }),
      gatewayDeployment('healthy', healthyUrl, { priority: 1 }),
    ],
  });
  const admin = await startConfigPeer(stateOf([buyer], [
    gatewayModel('baseline', healthyUrl, { defaultMaxTokens: 128 }),
    failingFirst('refuse-429', refuse429.url), failingFirst('refuse-503', refuse503.url), failingFirst('hang', hang.url),
    failingFirst('ejected', ejectable.url),
  ]));
  ledger.credit(buyer.organisation.id, 10n ** 15n);
  const forget = setInterval(() => { for (const list of Object.values(ledger.calls)) list.length = 0; for (const list of Object.values(ledger.answers)) list.length = 0; }, 1000);
  const routingEnv = { PROXY_ROUTING_ATTEMPT_TIMEOUT_MS: String(attemptTimeoutMs) };
  const steady = await startProxy(admin.address, ledger.address, { ...routingEnv, PROXY_OUTLIER_CONSECUTIVE_FAILURES: '1000' });
  const ejecting = await startProxy(admin.address, ledger.address, { ...routingEnv, PROXY_OUTLIER_CONSECUTIVE_FAILURES: '1' });
  const stopped = [steady.proxy, ejecting.proxy].map((proxy) => new Promise((resolve) => proxy.once('exit', resolve)));
  try {
    // Warm-up: the JIT and the connections, on every row's path.
    for (const slug of ['baseline', 'refuse-429', 'refuse-503']) await latenciesUs(steady.port, buyer.apiKey, slug, 100);
    await latenciesUs(steady.port, buyer.apiKey, 'hang', 2);
    await latenciesUs(ejecting.port, buyer.apiKey, 'baseline', 100);
    await latenciesUs(ejecting.port, buyer.apiKey, 'ejected', 1);
    const seenBeforeEjected = ejectable.seen();

    // The fast rows in alternating rounds, so drift on a shared machine falls on all of them alike.
    const rounds = 4;
    const fast = [
      { name: 'baseline: one healthy deployment', port: steady.port, slug: 'baseline' },
      { name: 'first refuses 429 at once', port: steady.port, slug: 'refuse-429' },
      { name: 'first refuses 503 at once', port: steady.port, slug: 'refuse-503' },
      { name: 'second proxy: baseline', port: ejecting.port, slug: 'baseline' },
      { name: 'second proxy: first ejected (after one 503)', port: ejecting.port, slug: 'ejected' },
    ];
    const values = new Map<string, number[]>(fast.map((row) => [row.name, []]));
    const seenBefore = { 429: refuse429.seen(), 503: refuse503.seen() };
    for (let round = 0; round < rounds; round += 1) {
      for (const row of round % 2 === 0 ? fast : [...fast].reverse()) {
        values.get(row.name)!.push(...await latenciesUs(row.port, buyer.apiKey, row.slug, Math.ceil(fastRequests / rounds)));
      }
    }
    const hangValues = await latenciesUs(steady.port, buyer.apiKey, 'hang', hangRequests);
    const rows = [
      ...fast.map((row) => ({ name: row.name, values: values.get(row.name)! })),
      { name: `first hangs (attempt timeout ${attemptTimeoutMs} ms)`, values: hangValues },
    ].map((row) => ({ name: row.name, requests: row.values.length, p50: quantile(row.values, 0.5), p99: quantile(row.values, 0.99) }));
    // Every request of the refusing rows really tried the failing deployment first.
    process.stdout.write(`the refusing deployments saw 429: ${refuse429.seen() - seenBefore[429]}, 503: ${refuse503.seen() - seenBefore[503]} requests of the measured ones\n`);
    // Each row against the baseline of its own proxy process, measured in the same rounds.
    const baselineOf = (name: string) => (name.startsWith('second proxy') ? rows[3]! : rows[0]!).p50;
    const lines = rows.map((row) => `${row.name.padEnd(44)} ${String(row.requests).padStart(5)} req  p50 ${String(row.p50).padStart(7)} µs  p99 ${String(row.p99).padStart(7)} µs  p50 ratio ${(row.p50 / baselineOf(row.name)).toFixed(2)}`);
    for (const line of lines) process.stdout.write(`${line}\n`);
    const ejectedSeen = ejectable.seen() - seenBeforeEjected;
    process.stdout.write(`ejected row: the failing deployment saw ${ejectedSeen} of its ${fastRequests} requests (it was ejected by the warm-up's one 503)\n`);
    if (ejectedSeen > 0) throw new Error(`the ejected deployment still took ${ejectedSeen} requests`);
    mkdirSync(`${repoRoot}bench-results`, { recursive: true });
    writeFileSync(`${repoRoot}bench-results/failover.json`, `${JSON.stringify({ date: new Date().toISOString(), attemptTimeoutMs, rows }, null, 2)}\n`);
  } finally {
    clearInterval(forget);
    steady.proxy.kill('SIGTERM');
    ejecting.proxy.kill('SIGTERM');
    await Promise.all(stopped);
    healthy.child.kill('SIGTERM');
    for (const failing of [refuse429, refuse503, hang, ejectable]) {
      failing.server.closeAllConnections();
      failing.server.close();
    }
    await Promise.all([ledger.close(), admin.close()]);
  }
}

await main();
