import { fileURLToPath } from 'node:url';
import { startServiceProcess, type ServiceProcess } from '@gateway/testkit/outside-vitest';

export { freePort, waitUntilReady, type ServiceProcess } from '@gateway/testkit/outside-vitest';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** Starts `node services/<name>/src/main.ts` with exactly the given environment (plus PATH). */
export function startService(name: 'ledger' | 'admin' | 'proxy', env: Record<string, string>): ServiceProcess {
  return startServiceProcess(name, `services/${name}/src/main.ts`, env, repoRoot);
}
