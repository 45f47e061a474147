/**
 * Loaded into the benched proxy with `--import` (BENCH_PROXY_MEMORY=1; never in production): where
 * the process's resident memory is. Every 100 ms it samples the RSS (/proc/self/status); at each
 * new peak it records the breakdown (/proc/self/smaps_rollup and /proc/self/smaps, V8's heap
 * spaces, process.memoryUsage()). On SIGWINCH (ignored by default, so a proxy without the probe
 * is not harmed by it) it writes the breakdown at the peak since the last SIGWINCH, and the one
 * of this moment, as one JSON line to BENCH_PROXY_MEMORY_FILE, then starts a new peak. On SIGURG
 * it runs a full garbage collection (the bench starts the proxy with `--expose-gc` for it), so a
 * bench can tell garbage V8 has not collected yet from memory something still holds.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';

const file = process.env.BENCH_PROXY_MEMORY_FILE;
if (file === undefined) throw new Error('memory-probe: BENCH_PROXY_MEMORY_FILE is not set');
const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;

function statusKb(field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
  return Number(match?.[1] ?? 0);
}

/**
 * Resident memory by kind of mapping, MB: file-backed (the node binary's text, shared
 * libraries), glibc's main arena (`[heap]`), glibc's thread arenas (anonymous read-write
 * mappings at the start of a 64 MiB-aligned reservation that is 64 MiB with its inaccessible
 * rest), thread stacks (`[stack]` and anonymous mappings directly after a one-page guard), and the
 * other anonymous memory (V8's heap pages, large malloc blocks: glibc gives those their own mmap).
 */
function mappings(): Record<string, number> {
  const lines = readFileSync('/proc/self/smaps', 'utf8').split('\n');
  interface Mapping { start: bigint; end: bigint; perms: string; path: string; rssKb: number }
  const list: Mapping[] = [];
  for (const line of lines) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header !== null) {
      list.push({ start: BigInt(`0x${header[1]}`), end: BigInt(`0x${header[2]}`), perms: header[3]!, path: header[4] ?? '', rssKb: 0 });
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss !== null && list.length > 0) list[list.length - 1]!.rssKb = Number(rss[1]);
  }
  const arenaSize = 64n * 1024n * 1024n;
  const kb = { file: 0, mainArena: 0, threadArenas: 0, stacks: 0, otherAnon: 0 };
  for (let i = 0; i < list.length; i++) {
    const m = list[i]!;
    if (m.path === '[heap]') kb.mainArena += m.rssKb;
    else if (m.path === '[stack]') kb.stacks += m.rssKb;
    else if (m.path.startsWith('/')) kb.file += m.rssKb;
    else if (m.path !== '') kb.otherAnon += m.rssKb;
    else {
      const next = list[i + 1];
      const previous = list[i - 1];
      const arena = m.perms.startsWith('rw') && m.start % arenaSize === 0n
        && (m.end - m.start === arenaSize || (next !== undefined && next.start === m.end && next.perms.startsWith('---') && next.end - m.start === arenaSize));
      const stack = previous !== undefined && previous.end === m.start && previous.perms.startsWith('---') && previous.end - previous.start === 4096n;
      if (arena) kb.threadArenas += m.rssKb;
      else if (stack) kb.stacks += m.rssKb;
      else kb.otherAnon += m.rssKb;
    }
  }
  return Object.fromEntries(Object.entries(kb).map(([name, value]) => [name, Math.round(value / 102.4) / 10]));
}

function rollup(): Record<string, number> {
  const text = readFileSync('/proc/self/smaps_rollup', 'utf8');
  const out: Record<string, number> = {};
  for (const field of ['Rss', 'Anonymous', 'Pss_Anon', 'Pss_File']) {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
    if (match !== null) out[field] = Math.round(Number(match[1]) / 102.4) / 10;
  }
  return out;
}

function breakdown(): Record<string, unknown> {
  const usage = process.memoryUsage();
  const heap = getHeapStatistics();
  const spaces = Object.fromEntries(getHeapSpaceStatistics().map((space) => [space.space_name, {
    usedMb: mb(space.space_used_size), sizeMb: mb(space.space_size), physicalMb: mb(space.physical_space_size),
  }]));
  return {
    rssMb: mb(usage.rss), rollup: rollup(), mappings: mappings(),
    v8: { heapPhysicalMb: mb(heap.total_physical_size), heapTotalMb: mb(usage.heapTotal), heapUsedMb: mb(usage.heapUsed), mallocedMb: mb(heap.malloced_memory), peakMallocedMb: mb(heap.peak_malloced_memory), spaces },
    externalMb: mb(usage.external), arrayBuffersMb: mb(usage.arrayBuffers),
  };
}

let peakKb = 0;
let atPeak: Record<string, unknown> | undefined;
const sampler = setInterval(() => {
  const rssKb = statusKb('VmRSS');
  if (rssKb > peakKb) {
    peakKb = rssKb;
    atPeak = breakdown();
  }
}, 100);
sampler.unref();

process.on('SIGWINCH', () => {
  appendFileSync(file, `${JSON.stringify({ at: new Date().toISOString(), hwmMb: Math.round(statusKb('VmHWM') / 102.4) / 10, peak: atPeak, now: breakdown() })}\n`);
  peakKb = 0;
  atPeak = undefined;
});

process.on('SIGURG', () => {
  (globalThis as { gc?: () => void }).gc?.();
});
