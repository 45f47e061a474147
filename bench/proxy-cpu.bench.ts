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
 * manifest's flags; the manifest's MALLOC_* variables are passed on too, and
 * BENCH_PROXY_MALLOC_ENV, `NAME=value …` or empty, replaces them), BENCH_PROXY_MEMORY=1 (the
 * proxy loads support/memory-probe.ts: after each mode a line gives its memory at that mode's
 * peak RSS, V8's spaces, ArrayBuffers, glibc's arenas and file-backed pages; the JSON is in
 * bench-results/proxy-memory.jsonl; the probe's sampling adds a little CPU and memory itself),
 * BENCH_PROXY_HEAP_SNAPSHOT=1 (a heap snapshot of the proxy after the load under
 * bench-results/profiles; summarise it with `node bench/support/heap-snapshot-summary.ts <file>`;
 * writing it takes the RSS up by the snapshot's size, so the figures after it mean nothing),
 * BENCH_SLOW_SOCKETS=N (after everything else, N clients that send a request's headers and all
 * but the last bytes of its body (BENCH_SLOW_SOCKETS_BODY_KB, 1), then a byte every 5 s for
 * BENCH_SLOW_SOCKETS_HOLD_S (30), then close: the proxy's RSS before, while they are held and
 * over BENCH_SLOW_SOCKETS_AFTER_S (60) after; with BENCH_PROXY_MEMORY=1 also its breakdown then
 * and after a forced full GC), BENCH_PROXY_LOG_LEVEL (default `warn`, as
 * the gateway bench runs it; `info` writes the per-request log line, to /dev/null),
 * BENCH_PROXY_TRACING=1 (the proxy exports its traces over OTLP/HTTP to a sink in this process
 * that reads and drops them: what tracing on costs the proxy; OTEL_TRACES_SAMPLER and
 * OTEL_TRACES_SAMPLER_ARG are passed on, e.g. `parentbased_traceidratio` and `0.1`),
 * After the load it measures in process what routing (one deployment) adds to a request
 * (support/routing-overhead.ts) and gives it as a share of the proxy's CPU per request.
 * BENCH_PROXY_CALLGRIND=1 (the proxy runs under `valgrind --tool=callgrind` with instrumentation
 * off until the warm-up (BENCH_WARMUP_REQUESTS, 4000) is over; each mode then sends BENCH_REQUESTS
 * (5000: fewer let one major garbage collection more or less move the count by 30%) and the table
 * gives the proxy's instructions per request: a count, not a time, so an A/B of two builds can
 * resolve a 1-2% difference that CPU time on a shared machine cannot; the proxy is ~50x slower there).
 */
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { serviceTlsEnv, sharedTestPki } from '@gateway/testkit';
import { processCpuMs, processPeakRssMb, processRssMb } from '@gateway/testkit/outside-vitest';
import { startConfigPeer } from '../services/proxy/src/test-support/config-peer.ts';
import { startLedgerPeer } from '../services/proxy/src/test-support/ledger-peer.ts';
import { gatewayModel, stateOf, tenant } from '../services/proxy/src/test-support/proxy-world.ts';
import { deployedProxyEnv } from './support/deployed-proxy-env.ts';
import { startHelper, waitForReady } from './support/proxy-process.ts';
import { measureRoutingOverhead } from './support/routing-overhead.ts';

const repoRoot = fileURLToPath(new URL('../', import.meta.url));
const durationS = Number(process.env.BENCH_DURATION_S ?? 8);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const onlyMode = process.env.BENCH_MODE;
const profileDir = `${repoRoot}bench-results/profiles`;
const logLevel = process.env.BENCH_PROXY_LOG_LEVEL ?? 'warn';
const deployed = deployedProxyEnv();
const deployedNodeOptions = process.env.BENCH_PROXY_NODE_OPTIONS ?? deployed.nodeOptions;
/** glibc's malloc tuning of the manifest (MALLOC_ARENA_MAX, …): part of the proxy's memory as deployed. BENCH_PROXY_MALLOC_ENV (`NAME=value …`, or empty) replaces it. */
const deployedMallocEnv: Record<string, string> = process.env.BENCH_PROXY_MALLOC_ENV === undefined
  ? deployed.mallocEnv
  : Object.fromEntries(process.env.BENCH_PROXY_MALLOC_ENV.split(/\s+/).filter((pair) => pair !== '').map((pair) => pair.split('=', 2) as [string, string]));
const memoryFile = process.env.BENCH_PROXY_MEMORY === '1' ? `${repoRoot}bench-results/proxy-memory.jsonl` : undefined;
const memoryOptions = memoryFile === undefined ? '' : `--expose-gc --import=${new URL('./support/memory-probe.ts', import.meta.url).href}`;
const heapSnapshotOptions = process.env.BENCH_PROXY_HEAP_SNAPSHOT === '1' ? `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${profileDir}` : '';
const slowSockets = Number(process.env.BENCH_SLOW_SOCKETS ?? 0);
const slowSocketsHoldS = Number(process.env.BENCH_SLOW_SOCKETS_HOLD_S ?? 30);
const slowSocketsAfterS = Number(process.env.BENCH_SLOW_SOCKETS_AFTER_S ?? 60);
const profileOptions = process.env.BENCH_PROXY_CPU_PROF === '1' ? `--cpu-prof --cpu-prof-dir=${profileDir}` : '';
const callgrind = process.env.BENCH_PROXY_CALLGRIND === '1';
const callgrindRequests = Number(process.env.BENCH_REQUESTS ?? 5000);
const callgrindWarmUpRequests = Number(process.env.BENCH_WARMUP_REQUESTS ?? 4000);
const callgrindDir = `${repoRoot}bench-results/callgrind`;
/**
 * Under callgrind the proxy runs ~50x slower: its clocks are stretched to match, so a request
 * does there what it does at full speed (no ledger call times out, no stream lives long enough
 * to checkpoint, no grant expires mid-run).
 */
const slowProxyEnv = {
  LEDGER_CALL_TIMEOUT_MS: '60000', PROXY_CHECKPOINT_INTERVAL_MS: '100000', PROXY_STREAM_LEASE_MS: '300000',
  PROXY_GRANT_WINDOW_MS: '60000', PROXY_GRANT_TTL_MS: '600000', PROXY_GRANT_IDLE_RETURN_MS: '600000', PROXY_CONFIG_STALENESS_MS: '600000',
  UPSTREAM_CONNECT_TIMEOUT_MS: '600000', UPSTREAM_FIRST_BYTE_TIMEOUT_MS: '600000', UPSTREAM_IDLE_TIMEOUT_MS: '600000',
};
const bodies = {
  'non-streaming': { model: 'chat', messages: [{ role: 'user', content: 'Benchmark request [[fake:reply_words=16]]' }] },
  streaming: { model: 'chat', stream: true, messages: [{ role: 'user', content: 'Benchmark stream [[fake:reply_words=64]]' }] },
} as const;

/**
 * Instructions the proxy (running under callgrind) executes while `work` runs: instrumentation
 * is switched on and the counters zeroed before, and a dump taken after; the dump's total is
 * the count (every thread of the process, JIT-compiled code, the garbage collector and the
 * kernel-call wrappers included; the kernel's own work is not counted).
 */
async function instructionsDuring(pid: number, work: () => Promise<void>): Promise<number> {
  const control = (...args: string[]) => {
    const result = spawnSync('callgrind_control', [...args, String(pid)], { encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`callgrind_control ${args.join(' ')}: ${result.stderr}`);
  };
  // Dumps of earlier runs go: the one read below is this run's.
  for (const name of readdirSync(callgrindDir)) rmSync(`${callgrindDir}/${name}`);
  control('--instr=on');
  control('--zero');
  await work();
  control('--dump=measured');
  // The dump is written by the proxy's own thread, after callgrind_control returns: wait for it.
  let total: bigint | undefined;
  for (const deadline = Date.now() + 120_000; total === undefined && Date.now() < deadline;) {
    for (const name of readdirSync(callgrindDir).filter((file) => file.startsWith(`callgrind.out.${pid}.`))) {
      const text = readFileSync(`${callgrindDir}/${name}`, 'utf8');
      const match = /\ntotals: (\d+)/.exec(text);
      if (text.includes('Trigger: dump measured') && match) total = BigInt(match[1]!);
    }
    if (total === undefined) await new Promise((resolve) => setTimeout(resolve, 500));
  }
  control('--instr=off');
  if (total === undefined) throw new Error(`no callgrind dump of the measured requests in ${callgrindDir}`);
  return Number(total);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The probe's breakdown at the proxy's peak since the last one (bench/support/memory-probe.ts), as one line; the full JSON stays in `file`. */
async function memoryBreakdown(pid: number, file: string, label: string, which: 'peak' | 'now' = 'peak'): Promise<string> {
  const linesBefore = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').length : 0;
  process.kill(pid, 'SIGWINCH');
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(100)) {
    const lines = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((l) => l !== '') : [];
    if (lines.length <= linesBefore) continue;
    const sample = (JSON.parse(lines.at(-1)!) as { peak?: MemoryBreakdown; now?: MemoryBreakdown })[which];
    if (sample === undefined) return `${label} memory: no peak sampled`;
    const spaces = Object.entries(sample.v8.spaces).map(([name, space]) => `${name.replace(/_space$/, '')} ${space.usedMb}/${space.physicalMb}`).join(', ');
    const maps = Object.entries(sample.mappings).map(([name, value]) => `${name} ${value}`).join(', ');
    return `${label} memory at ${which === 'peak' ? 'peak ' : ''}RSS ${sample.rssMb} MB: V8 heap ${sample.v8.heapPhysicalMb} MB resident (used ${sample.v8.heapUsedMb}; per space used/resident: ${spaces}), `
      + `V8 malloced ${sample.v8.mallocedMb}, ArrayBuffers ${sample.arrayBuffersMb}, external ${sample.externalMb}; mappings: ${maps}`;
  }
  return `${label} memory: the probe did not answer`;
}

interface MemoryBreakdown {
  rssMb: number; mappings: Record<string, number>; arrayBuffersMb: number; externalMb: number;
  v8: { heapPhysicalMb: number; heapUsedMb: number; mallocedMb: number; spaces: Record<string, { usedMb: number; physicalMb: number }> };
}

/** Has the proxy write a heap snapshot (`--heapsnapshot-signal`); resolves with its file once written. */
async function heapSnapshot(pid: number): Promise<string> {
  const before = new Set(readdirSync(profileDir));
  process.kill(pid, 'SIGUSR2');
  for (const deadline = Date.now() + 120_000; Date.now() < deadline; await sleep(500)) {
    const written = readdirSync(profileDir).find((name) => !before.has(name) && name.endsWith('.heapsnapshot'));
    // Written in pieces by the proxy's main thread: done once its size stops changing.
    if (written !== undefined) {
      const size = () => statSync(`${profileDir}/${written}`).size;
      const first = size();
      await sleep(1000);
      if (size() === first) return `${profileDir}/${written}`;
    }
  }
  return 'not written within 120 s';
}

/**
 * What BENCH_SLOW_SOCKETS idle slow clients do to the proxy's RSS: each opens a connection and
 * sends a chat request's headers (a valid key, a Content-Length of BENCH_SLOW_SOCKETS_BODY_KB,
 * default 1 KiB) and all of its body but the last 8 bytes at once, then one more byte every 5 s
 * (never the last), for BENCH_SLOW_SOCKETS_HOLD_S; then all close, and the RSS is read again over
 * BENCH_SLOW_SOCKETS_AFTER_S. Figures in MB (VmRSS).
 */
async function slowSocketsRss(pid: number, port: number, apiKey: string): Promise<string> {
  const bodyBytes = Number(process.env.BENCH_SLOW_SOCKETS_BODY_KB ?? 1) * 1024;
  const prefix = '{"model":"chat","messages":[{"role":"user","content":"';
  const body = `${prefix}${'a'.repeat(bodyBytes - prefix.length - 8)}`;
  const before = processRssMb(pid);
  const sockets: Socket[] = [];
  let errors = 0;
  const early = new Map<string, number>();
  for (let i = 0; i < slowSockets; i++) {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => { errors++; });
    socket.once('data', (chunk: Buffer) => { const status = chunk.toString('latin1', 9, 12); early.set(status, (early.get(status) ?? 0) + 1); });
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${apiKey}\r\ncontent-type: application/json\r\ncontent-length: ${bodyBytes}\r\n\r\n${body}`);
    sockets.push(socket);
  }
  // At most 7 of the 8 bytes held back: a body that completed would be answered, and its socket freed.
  let trickled = 0;
  const trickle = setInterval(() => {
    if (trickled++ >= 7) return;
    for (const socket of sockets) if (!socket.destroyed) socket.write('a');
  }, 5000);
  let during = 0;
  for (let s = 0; s < slowSocketsHoldS; s++) {
    await sleep(1000);
    during = Math.max(during, processRssMb(pid));
  }
  clearInterval(trickle);
  const open = sockets.filter((socket) => !socket.destroyed).length;
  for (const socket of sockets) socket.destroy();
  const after: string[] = [];
  for (let s = 1; s <= slowSocketsAfterS; s++) {
    await sleep(1000);
    if (s % 10 === 0 || s === 1) after.push(`+${s}s ${processRssMb(pid)}`);
  }
  let breakdown = '';
  if (memoryFile !== undefined) {
    breakdown = `; ${await memoryBreakdown(pid, memoryFile, 'after the slow sockets', 'now')}`;
    // What a full collection gives back: garbage not collected yet, against memory still held.
    process.kill(pid, 'SIGURG');
    await sleep(5000);
    breakdown += `; ${await memoryBreakdown(pid, memoryFile, 'after a full GC and 5 s,', 'now')}`;
  }
  return `${slowSockets} slow sockets of ${bodyBytes / 1024} KiB bodies (${open} still open after ${slowSocketsHoldS} s, answered before the close: ${[...early].map(([status, count]) => `${count} × ${status}`).join(', ') || 'none'}, ${errors} errors): proxy RSS before ${before} MB, at most ${during} MB while held, after closing ${after.join(', ')} MB (peak ${processPeakRssMb(pid)})${breakdown}`;
}

async function main(): Promise<void> {
  if (callgrind) process.env.FAKE_UPSTREAM_KEEP_ALIVE_MS = '600000';
  const upstream = await startHelper('bench/support/fake-upstream-process.ts');
  const ledger = await startLedgerPeer();
  const buyer = tenant('org-bench', { rpmLimit: 1_000_000_000 });
  const admin = await startConfigPeer(stateOf([buyer], [gatewayModel('chat', `http://127.0.0.1:${upstream.port}/v1`, { defaultMaxTokens: 128 })]));
  ledger.credit(buyer.organisation.id, 10n ** 15n);
  // The peer records every call; a benchmark needs none of them.
  const forget = setInterval(() => { for (const list of Object.values(ledger.calls)) list.length = 0; for (const list of Object.values(ledger.answers)) list.length = 0; }, 1000);
  if (profileOptions !== '' || heapSnapshotOptions !== '') mkdirSync(profileDir, { recursive: true });
  if (memoryFile !== undefined) {
    mkdirSync(`${repoRoot}bench-results`, { recursive: true });
    rmSync(memoryFile, { force: true });
  }
  if (callgrind) mkdirSync(callgrindDir, { recursive: true });

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
  // Under callgrind: nothing counted until the warm-up is over (instructionsDuring switches it on).
  const [command, args] = callgrind
    ? ['valgrind', ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${callgrindDir}/callgrind.out.%p`, process.execPath, 'services/proxy/src/main.ts']]
    : [process.execPath, ['services/proxy/src/main.ts']];
  const proxy = spawn(command, args, {
    cwd: repoRoot,
    stdio: ['ignore', process.env.BENCH_PROXY_STDOUT === '1' ? 'inherit' : 'ignore', 'inherit'],
    env: {
      PATH: process.env.PATH ?? '', ...serviceTlsEnv(await sharedTestPki(), 'proxy'),
      NODE_OPTIONS: [profileOptions, memoryOptions, heapSnapshotOptions, deployedNodeOptions].filter((o) => o !== '').join(' '),
      ...deployedMallocEnv, ...(memoryFile === undefined ? {} : { BENCH_PROXY_MEMORY_FILE: memoryFile }),
      LOG_LEVEL: logLevel, BIND_HOST: '127.0.0.1', PROXY_HTTP_PORT: String(port), PROXY_METRICS_PORT: '0', PROXY_ID: 'bench-proxy',
      ADMIN_GRPC_URL: admin.address, LEDGER_GRPC_URL: ledger.address, ...tracingEnv, ...(callgrind ? slowProxyEnv : {}),
    },
  });
  const exited = new Promise((resolve) => proxy.once('exit', resolve));
  try {
    await waitForReady(`http://127.0.0.1:${port}/readyz`, proxy, callgrind ? 300_000 : 20_000);
    const rows: string[] = [];
    if (memoryFile !== undefined) process.stdout.write(`${await memoryBreakdown(proxy.pid!, memoryFile, 'ready, before any request:')}\n`);
    for (const mode of ['non-streaming', 'streaming'] as const) {
      if (onlyMode !== undefined && onlyMode !== mode) continue;
      const options = {
        url: `http://127.0.0.1:${port}/v1/chat/completions`, method: 'POST' as const, connections, pipelining: 1,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer.apiKey}` }, body: JSON.stringify(bodies[mode]),
      };
      if (callgrind) {
        // About the requests 2 s give at full speed, so the JIT has settled.
        await autocannon({ ...options, amount: callgrindWarmUpRequests, timeout: 120 });
        let answered = 0;
        let failed = 0;
        let failures: unknown;
        const instructions = await instructionsDuring(proxy.pid!, async () => {
          const result = await autocannon({ ...options, amount: callgrindRequests, timeout: 120 });
          answered = result['2xx'];
          failed = result.non2xx + result.errors + result.timeouts;
          failures = { non2xx: result.non2xx, errors: result.errors, timeouts: result.timeouts, statusCodes: result.statusCodeStats };
        });
        if (failed > 0 || answered === 0) throw new Error(`${mode}: ${failed} requests failed (${JSON.stringify(failures)}), ${answered} answered`);
        const row = `${mode.padEnd(14)} c=${connections}  proxy ${Math.round(instructions / answered).toLocaleString('en')} instructions/request (callgrind, ${answered} requests)`;
        process.stdout.write(`${row}\n`);
        rows.push(row);
        continue;
      }
      await autocannon({ ...options, duration: 2 });
      const before = processCpuMs(proxy.pid!);
      const result = await autocannon({ ...options, duration: durationS });
      const cpuMs = processCpuMs(proxy.pid!) - before;
      const answered = result['2xx'] + result.non2xx;
      if (result.non2xx > 0) throw new Error(`${mode}: ${result.non2xx} answers were not 2xx`);
      const row = `${mode.padEnd(14)} c=${connections}  ${String(Math.round(result.requests.average)).padStart(6)} req/s  p50 ${result.latency.p50} ms  p99 ${result.latency.p99} ms  proxy CPU ${(cpuMs / Math.max(1, answered)).toFixed(3)} ms/request (${answered} requests)`;
      process.stdout.write(`${row}\n`);
      rows.push(row);
      if (memoryFile !== undefined) process.stdout.write(`${await memoryBreakdown(proxy.pid!, memoryFile, mode)}\n`);
    }
    process.stdout.write(`proxy peak RSS ${processPeakRssMb(proxy.pid!)} MB\n`);
    if (heapSnapshotOptions !== '') process.stdout.write(`heap snapshot: ${await heapSnapshot(proxy.pid!)}\n`);

    if (!callgrind) {
      // Routing's share of a request, in process (a whole-proxy A/B cannot resolve 2% here): after the load, so the two do not share the cores.
      const routingOverhead = await measureRoutingOverhead();
      const shares = rows.map((row) => {
        const cpuMs = Number(/proxy CPU ([\d.]+) ms/.exec(row)?.[1]);
        return `${row.trim().split(/\s+/)[0]} ${((routingOverhead.addedUsPerRequest / 1000 / cpuMs) * 100).toFixed(2)}%`;
      });
      const line = `routing, one deployment: +${routingOverhead.addedUsPerRequest} µs CPU per request (routed ${routingOverhead.routedUsPerRequest}, direct ${routingOverhead.directUsPerRequest}; in process), of the proxy's CPU per request: ${shares.join(', ')}`;
      process.stdout.write(`${line}\n`);
      rows.push(line);
    }
    // After the load and the routing measurement, so the sockets meet a warmed proxy that is otherwise idle.
    if (slowSockets > 0) {
      const line = await slowSocketsRss(proxy.pid!, port, buyer.apiKey);
      process.stdout.write(`${line}\n`);
      rows.push(line);
    }
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
