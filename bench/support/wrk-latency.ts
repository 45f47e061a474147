/**
 * Latency at 1 µs resolution with Debian's `wrk` (apt-get install wrk). autocannon reports whole
 * milliseconds, so an added "+0 ms" at one connection can hide most of a millisecond. The gateway
 * bench runs wrk on each target after autocannon's own run, with the same method, headers and
 * body, and reports the percentiles beside autocannon's. The Lua script beside this file times
 * each request itself (first byte sent to last byte read): wrk's own percentiles are corrected for
 * coordinated omission, which adds made-up samples (see the script), so they are kept only as
 * `correctedP50Us` / `correctedP99Us`.
 */
import { execFile, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('./wrk-latency.lua', import.meta.url));
/** The marker of the script's result line on wrk's stdout (wrk prints its own report before it). */
const resultMarker = 'wrk-latency ';

/**
 * One wrk run's figures: each request's latency p50 and p99 in µs, wrk's coordinated-omission
 * corrected p50 and p99 in µs, answered requests per second, requests answered 2xx, and failures
 * (non-2xx answers, socket errors, timeouts).
 */
export interface WrkLatency { p50Us: number; p99Us: number; correctedP50Us: number; correctedP99Us: number; rps: number; ok: number; failed: number }

/** Whether the `wrk` command can be run here (yes/no; wrk exits 1 after printing its version, so only a spawn error means it is absent). */
export function wrkAvailable(): boolean {
  return spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined;
}

/** The q-quantile (0..1) in µs of a histogram of [latency µs, requests] by the nearest-rank method; 0 when it is empty. */
function histogramQuantileUs(histogram: ReadonlyArray<readonly [number, number]>, q: number): number {
  const sorted = [...histogram].sort((a, b) => a[0] - b[0]);
  const total = sorted.reduce((sum, [, count]) => sum + count, 0);
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (const [latencyUs, count] of sorted) {
    seen += count;
    if (seen >= rank) return latencyUs;
  }
  return 0;
}

/**
 * Drives `url` with wrk for `durationS` whole seconds at `connections` connections (one wrk
 * thread each, so that the script can time each connection's request; 10 s timeout) and returns
 * its requests' p50 / p99 latency in µs.
 */
export async function wrkLatency(options: { url: string; headers: Record<string, string>; body: string; connections: number; durationS: number }): Promise<WrkLatency> {
  const args = [
    '--threads', String(options.connections), '--connections', String(options.connections), '--duration', `${Math.max(1, Math.round(options.durationS))}s`,
    // A request slower than wrk's default 2 s would count as a timeout with no latency recorded;
    // the gateway's p99 at 32 connections has been near half a second.
    '--timeout', '10s', '--script', script,
    ...Object.entries(options.headers).flatMap(([name, value]) => ['--header', `${name}: ${value}`]),
    options.url,
  ];
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile('wrk', args, { env: { ...process.env, WRK_BODY: options.body }, maxBuffer: 64 << 20 }, (error, out, err) => {
      if (error) reject(new Error(`wrk ${options.url} failed: ${error.message}${err ? `\n${err}` : ''}`));
      else resolve(out);
    });
  });
  const line = stdout.split('\n').find((l) => l.startsWith(resultMarker));
  if (line === undefined) throw new Error(`wrk printed no result line for ${options.url}:\n${stdout}`);
  const result = JSON.parse(line.slice(resultMarker.length)) as {
    requests: number; durationUs: number; correctedP50Us: number; correctedP99Us: number; non2xx: number;
    connectErrors: number; readErrors: number; writeErrors: number; timeouts: number; histogram: Array<[number, number]>;
  };
  const timed = result.histogram.reduce((sum, [, count]) => sum + count, 0);
  // Every answered request passes through the script's response(): a difference means the timing missed some.
  if (timed !== result.requests) throw new Error(`wrk ${options.url}: the script timed ${timed} requests of the ${result.requests} wrk counted`);
  return {
    p50Us: histogramQuantileUs(result.histogram, 0.5), p99Us: histogramQuantileUs(result.histogram, 0.99),
    correctedP50Us: result.correctedP50Us, correctedP99Us: result.correctedP99Us,
    rps: Math.round(result.requests / (result.durationUs / 1e6)),
    ok: result.requests - result.non2xx,
    failed: result.non2xx + result.connectErrors + result.readErrors + result.writeErrors + result.timeouts,
  };
}
