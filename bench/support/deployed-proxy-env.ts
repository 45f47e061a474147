import { readFileSync } from 'node:fs';

/** The proxy's Kubernetes manifest, whose process settings the benches run it with. */
const manifestUrl = new URL('../../deploy/kubernetes/base/proxy.yaml', import.meta.url);

/**
 * The proxy's process settings as its manifest deploys them, read from deploy/kubernetes/base/proxy.yaml
 * so that a bench measures the proxy as it runs in production and the two cannot drift: its Node
 * flags (`NODE_OPTIONS`, heap sizing; required) and glibc's malloc tuning (`MALLOC_*`, by name).
 */
export function deployedProxyEnv(): { nodeOptions: string; mallocEnv: Record<string, string> } {
  const manifest = readFileSync(manifestUrl, 'utf8');
  const nodeOptions = /name: NODE_OPTIONS, value: "([^"]*)"/.exec(manifest)?.[1];
  if (nodeOptions === undefined) throw new Error('deploy/kubernetes/base/proxy.yaml sets no NODE_OPTIONS for the proxy');
  const mallocEnv = Object.fromEntries([...manifest.matchAll(/name: (MALLOC_[A-Z_]+), value: "([^"]*)"/g)].map((match) => [match[1]!, match[2]!]));
  return { nodeOptions, mallocEnv };
}
