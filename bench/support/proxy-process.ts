/**
 * Pieces the proxy benchmarks share: a helper process that announces its port, and waiting for a
 * proxy process to answer its readiness probe.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** Starts a helper script that prints `{"port":N}` first; resolves with the process and its port. */
export async function startHelper(script: string): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [script], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] });
  const firstLine = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return { child, port: (JSON.parse(firstLine) as { port: number }).port };
}

/** Resolves once `url` (a proxy's /readyz) answers 200; throws if the proxy exits or `timeoutMs` (20 s) pass. */
export async function waitForReady(url: string, proxy: ChildProcess, timeoutMs = 20_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline;) {
    if (proxy.exitCode !== null) throw new Error(`proxy exited with ${proxy.exitCode}`);
    try {
      if ((await fetch(url)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`proxy not ready at ${url}`);
}
