/**
 * `npx -y pnpm@12 bench proxy-cpu`: the proxy's own CPU per request, without PostgreSQL, Redis or
 * the real ledger and admin, so a change to the proxy's hot path can be measured in seconds.
 * The proxy runs as its own process (`services/proxy/src/main.ts`, with the Node flags its
 * Kubernetes manifest sets), wired to the in-memory ledger peer and config peer of its tests
 * (real gRPC with mTLS, in this process) and to the fake upstream (its own process). autocannon
 * drives it at BENCH_CONNECTIONS (32) for BENCH_DURATION_S (8) after a 2-s warm-up, non-streaming
 * then streaming, and the table gives the proxy process's CPU ms per answered request (from
 * /proc, 10-ms clock ticks). RPM is the in-process limiter (no REDIS_URL): the Redis round trip
 * is not the proxy's CPU. The run fails if any request was not a 200.
 *
 * Environment: BENCH_MODE (`non-streaming` or `streaming`: only that one), BENCH_PROXY_CPU_PROF=1
 * (a `--cpu-prof` profile of the proxy under bench-results/profiles; summarise it with
 * `node bench/support/cpu-profile-summary.ts <file>`), BENCH_PROXY_NODE_OPTIONS (replaces the
 * manifest's flags), BENCH_PROXY_LOG_LEVEL (default `warn`, as
 * the gateway bench runs it; `info` writes the per-request log line, to /dev/null),
 * BENCH_PROXY_TRACING=1 (the proxy exports its traces over OTLP/HTTP to a sink in this process
 * that reads and drops them: what tracing on costs the proxy; OTEL_TRACES_SAMPLER and
 * OTEL_TRACES_SAMPLER_ARG are passed on, e.g. `parentbased_traceidratio` and `0.1`).
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { serviceTlsEnv, sharedTestPki } from '@gateway/testkit';
import { startConfigPeer } from '../services/proxy/src/test-support/config-peer.ts';
import { startLedgerPeer } from '../services/proxy/src/test-support/ledger-peer.ts';
import { gatewayModel, stateOf, tenant } from '../services/proxy/src/test-support/proxy-world.ts';
import { startHelper, waitForReady } from './support/proxy-process.ts';

const repoRoot = fileURLToPath(new URL('../', import.meta.url));
const durationS = Number(process.env.BENCH_DURATION_S ?? 8);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const onlyMode = process.env.BENCH_MODE;
const profileDir = `${repoRoot}bench-results/profiles`;
const logLevel = process.env.BENCH_PROXY_LOG_LEVEL ?? 'warn';
const deployedNodeOptions = process.env.BENCH_PROXY_NODE_OPTIONS ?? /name: NODE_OPTIONS, value: "([^"]*)"/.exec(readFileSync(`${repoRoot}deploy/kubernetes/base/proxy.yaml`, 'utf8'))?.[1] ?? '';
const profileOptions = process.env.BENCH_PROXY_CPU_PROF === '1' ? `--cpu-prof --cpu-prof-dir=${profileDir}` : '';
const bodies = {
  'non-streaming': { model: 'chat', messages: [{ role: 'user', content: 'Benchmark request [[fake:reply_words=16]]' }] },
  streaming: { model: 'chat', stream: true, messages: [{ role: 'user', content: 'Benchmark stream [[fake:reply_words=64]]' }] },
} as const;

/** CPU time (user + system) a process has used so far, ms (clock ticks of 10 ms). */
function cpuTimeMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Peak resident memory of a process so far, MB (VmHWM). */
function peakRssMb(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Math.round(Number(match[1]) / 1024) : 0;
}

async function main(): Promise<void> {
  const upstream = await startHelper('bench/support/fake-upstream-process.ts');
  const ledger = await startLedgerPeer();
  const buyer = tenant('org-bench', { rpmLimit: 1_000_000_000 });
  const admin = await startConfigPeer(stateOf([buyer], [gatewayModel('chat', `http://127.0.0.1:${upstream.port}/v1`, { defaultMaxTokens: 128 })]));
  ledger.credit(buyer.organisation.id, 10n ** 15n);
  // The peer records every call; a benchmark needs none of them.
  const forget = setInterval(() => { for (const list of Object.values(ledger.calls)) list.length = 0; for (const list of Object.values(ledger.answers)) list.length = 0; }, 1000);
  if (profileOptions !== '') mkdirSync(profileDir, { recursive: true });

  // Tracing on: an OTLP endpoint that reads each export and drops it (the receiver's cost is not the proxy's).
  const traceSink = process.env.BENCH_PROXY_TRACING === '1'
    ? createServer((request, response) => { request.resume(); request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}')); })
    : undefined;
  if (traceSink !== undefined) await new Promise<void>((resolve) => traceSink.listen(0, '127.0.0.1', resolve));
  const tracingEnv: Record<string, string> = traceSink === undefined ? {} : {
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(traceSink.address() as AddressInfo).port}`,
    ...(process.env.OTEL_TRACES_SAMPLER ? { OTEL_TRACES_SAMPLER: process.env.OTEL_TRACES_SAMPLER } : {}),
    ...(process.env.OTEL_TRACES_SAMPLER_ARG ? { OTEL_TRACES_SAMPLER_ARG: process.env.OTEL_TRACES_SAMPLER_ARG } : {}),
  };

  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const proxy = spawn(process.execPath, ['services/proxy/src/main.ts'], {
    cwd: repoRoot,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      PATH: process.env.PATH ?? '', ...serviceTlsEnv(await sharedTestPki(), 'proxy'),
      NODE_OPTIONS: [profileOptions, deployedNodeOptions].filter((o) => o !== '').join(' '),
      LOG_LEVEL: logLevel, BIND_HOST: '127.0.0.1', PROXY_HTTP_PORT: String(port), PROXY_METRICS_PORT: '0', PROXY_ID: 'bench-proxy',
      ADMIN_GRPC_URL: admin.address, LEDGER_GRPC_URL: ledger.address, ...tracingEnv,
    },
  });
  const exited = new Promise((resolve) => proxy.once('exit', resolve));
  try {
    await waitForReady(`http://127.0.0.1:${port}/readyz`, proxy);
    const rows: string[] = [];
    for (const mode of ['non-streaming', 'streaming'] as const) {
      if (onlyMode !== undefined && onlyMode !== mode) continue;
      const options = {
        url: `http://127.0.0.1:${port}/v1/chat/completions`, method: 'POST' as const, connections, pipelining: 1,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer.apiKey}` }, body: JSON.stringify(bodies[mode]),
      };
      await autocannon({ ...options, duration: 2 });
      const before = cpuTimeMs(proxy.pid!);
      const result = await autocannon({ ...options, duration: durationS });
      const cpuMs = cpuTimeMs(proxy.pid!) - before;
      const answered = result['2xx'] + result.non2xx;
      if (result.non2xx > 0) throw new Error(`${mode}: ${result.non2xx} answers were not 2xx`);
      const row = `${mode.padEnd(14)} c=${connections}  ${String(Math.round(result.requests.average)).padStart(6)} req/s  p50 ${result.latency.p50} ms  p99 ${result.latency.p99} ms  proxy CPU ${(cpuMs / Math.max(1, answered)).toFixed(3)} ms/request (${answered} requests)`;
      process.stdout.write(`${row}\n`);
      rows.push(row);
    }
    process.stdout.write(`proxy peak RSS ${peakRssMb(proxy.pid!)} MB\n`);
    mkdirSync(`${repoRoot}bench-results`, { recursive: true });
    writeFileSync(`${repoRoot}bench-results/proxy-cpu.json`, `${JSON.stringify({ date: new Date().toISOString(), rows }, null, 2)}\n`);
  } finally {
    clearInterval(forget);
    proxy.kill('SIGTERM');
    await exited;
    upstream.child.kill('SIGTERM');
    traceSink?.closeAllConnections();
    traceSink?.close();
    await Promise.all([ledger.close(), admin.close()]);
  }
}

await main();
