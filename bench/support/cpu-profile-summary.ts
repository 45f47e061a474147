/**
 * Summarises a V8 `.cpuprofile` (from `--cpu-prof`): the functions with the most self time,
 * and the share of time in idle, GC and program (native) nodes, so a profile of a loaded
 * process can be read in a terminal. Usage: node bench/support/cpu-profile-summary.ts <file> [top N]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }
interface CpuProfile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number }

const [file, topText] = process.argv.slice(2);
if (!file) throw new Error('usage: cpu-profile-summary.ts <file.cpuprofile> [top N]');
const top = Number(topText ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;

// Self time per node, µs: each sample's delta belongs to the node sampled.
const nodeById = new Map(profile.nodes.map((node) => [node.id, node]));
const selfUsByNode = new Map<number, number>();
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i]!;
  selfUsByNode.set(id, (selfUsByNode.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
}

/** A short place for a frame: the path from node_modules' package or the repository folder on. */
function place(url: string, line: number): string {
  if (url === '') return '';
  const trimmed = url.replace(/^file:\/\//, '').replace(/.*node_modules\/\.pnpm\/[^/]+\/node_modules\//, '').replace(/.*\/work\/main\//, '');
  return `${trimmed}:${line + 1}`;
}

const selfUsByFunction = new Map<string, number>();
const selfUsByPackage = new Map<string, number>();
let totalUs = 0;
for (const [id, selfUs] of selfUsByNode) {
  const node = nodeById.get(id)!;
  const name = node.callFrame.functionName || '(anonymous)';
  const key = `${name} ${place(node.callFrame.url, node.callFrame.lineNumber)}`.trim();
  selfUsByFunction.set(key, (selfUsByFunction.get(key) ?? 0) + selfUs);
  const url = node.callFrame.url;
  const pkg = url === '' ? name.startsWith('(') ? name : '(native)'
    : url.startsWith('node:') ? 'node:internals'
      : /node_modules\/\.pnpm\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1]
        ?? /\/work\/main\/((?:services|packages)\/[^/]+)/.exec(url)?.[1] ?? url;
  selfUsByPackage.set(pkg, (selfUsByPackage.get(pkg) ?? 0) + selfUs);
  totalUs += selfUs;
}

const idleUs = [...selfUsByFunction].filter(([key]) => key.startsWith('(idle)')).reduce((sum, [, us]) => sum + us, 0);
const busyUs = totalUs - idleUs;
const line = (label: string, us: number) => `${(us / 1000).toFixed(0).padStart(8)} ms ${(100 * us / busyUs).toFixed(1).padStart(5)}%  ${label}`;
process.stdout.write(`profile ${(totalUs / 1e6).toFixed(1)} s, busy ${(busyUs / 1e6).toFixed(1)} s (${(100 * busyUs / totalUs).toFixed(0)}%); shares below are of busy time\n\n`);
process.stdout.write('self time by package:\n');
for (const [pkg, us] of [...selfUsByPackage].filter(([pkg]) => pkg !== '(idle)').sort((a, b) => b[1] - a[1]).slice(0, 20)) process.stdout.write(`${line(pkg, us)}\n`);
process.stdout.write(`\ntop ${top} functions by self time:\n`);
for (const [key, us] of [...selfUsByFunction].filter(([key]) => !key.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, top)) process.stdout.write(`${line(key, us)}\n`);
