/**
 * Summarises a V8 `.heapsnapshot` (e.g. from BENCH_PROXY_HEAP_SNAPSHOT=1 in the proxy-cpu bench):
 * self size and count by node type and constructor (objects) or type (strings, code, arrays…),
 * largest first, so a heap can be read in a terminal. Self sizes only: what an object holds
 * through its edges is counted where it lives. Usage: node bench/support/heap-snapshot-summary.ts <file> [top N]
 */
import { readFileSync } from 'node:fs';

interface HeapSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] }; node_count: number };
  nodes: number[];
  strings: string[];
}

const [file, topText] = process.argv.slice(2);
if (!file) throw new Error('usage: heap-snapshot-summary.ts <file.heapsnapshot> [top N]');
const top = Number(topText ?? 40);
const heap = JSON.parse(readFileSync(file, 'utf8')) as HeapSnapshot;
const fields = heap.snapshot.meta.node_fields;
const typeNames = heap.snapshot.meta.node_types[0];
const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((field) => fields.indexOf(field)) as [number, number, number];

const groups = new Map<string, { bytes: number; count: number }>();
const byType = new Map<string, number>();
let total = 0;
for (let i = 0; i < heap.nodes.length; i += fields.length) {
  const type = typeNames[heap.nodes[i + typeAt]!]!;
  const size = heap.nodes[i + sizeAt]!;
  // Objects and closures by constructor or function name; everything else by type alone (a string's name is its text).
  const name = type === 'object' || type === 'closure' || type === 'native' ? heap.strings[heap.nodes[i + nameAt]!]!.slice(0, 60) : '';
  const key = `${type}${name === '' ? '' : ` ${name}`}`;
  const group = groups.get(key) ?? { bytes: 0, count: 0 };
  group.bytes += size;
  group.count++;
  groups.set(key, group);
  byType.set(type, (byType.get(type) ?? 0) + size);
  total += size;
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(2);
process.stdout.write(`${(heap.nodes.length / fields.length).toLocaleString('en')} nodes, ${mb(total)} MB self size in all\n\nby type:\n`);
for (const [type, bytes] of [...byType].sort((a, b) => b[1] - a[1])) process.stdout.write(`  ${mb(bytes).padStart(8)} MB  ${type}\n`);
process.stdout.write(`\nlargest groups (type and constructor):\n`);
for (const [key, group] of [...groups].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, top)) {
  process.stdout.write(`  ${mb(group.bytes).padStart(8)} MB  ${String(group.count).padStart(8)}  ${key}\n`);
}
