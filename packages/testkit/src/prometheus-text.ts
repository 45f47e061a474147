/** One sample of a Prometheus text exposition: metric name (with _bucket/_sum/_count), labels and value. */
export interface PrometheusSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** `name{a="x",b="y"} 1.5` (labels optional); label values as prom-client writes them. */
const samplePattern = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const labelPattern = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** Parses the text a /metrics endpoint serves into its samples (comments and blank lines skipped). */
export function parsePrometheusText(text: string): PrometheusSample[] {
  const samples: PrometheusSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = samplePattern.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? '').matchAll(labelPattern)) {
      labels[name!] = value!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/**
 * The sum of the samples named `name` whose labels include every one of `labels` (a subset
 * match: `{}` sums all series); 0 when none match, as a counter never incremented reads.
 */
export function sumSamples(samples: readonly PrometheusSample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((sample) => sample.name === name && Object.entries(labels).every(([label, value]) => sample.labels[label] === value))
    .reduce((total, sample) => total + sample.value, 0);
}

/** Fetches `url` (a /metrics endpoint) and parses what it serves; throws on a non-200 answer. */
export async function scrapeMetrics(url: string): Promise<PrometheusSample[]> {
  const response = await fetch(url);
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
  return parsePrometheusText(await response.text());
}
