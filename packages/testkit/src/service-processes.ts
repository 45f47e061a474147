import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

/** A service started as its own process, as in production. */
export interface ServiceProcess {
  name: string;
  child: ChildProcess;
  /** Everything the process wrote, for diagnosing a failure and for checking logs hold no secrets. */
  output(): string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** A TCP port that was free a moment ago (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Starts `node <entryPath>` with exactly the given environment (plus PATH), capturing its output. */
export function startServiceProcess(name: string, entryPath: string, env: Record<string, string>, cwd?: string): ServiceProcess {
  const child = spawn(process.execPath, [entryPath], {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const chunks: string[] = [];
  child.stdout!.on('data', (chunk: Buffer) => chunks.push(chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => chunks.push(chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    name,
    child,
    output: () => chunks.join(''),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

/**
 * Polls a /readyz URL until it answers 200. Fails with the process output if the process exits,
 * or after timeoutMs (a bound on waiting, not a timing assertion).
 */
export async function waitUntilReady(service: ServiceProcess, readyUrl: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (service.child.exitCode !== null) throw new Error(`${service.name} exited with ${service.child.exitCode}:\n${service.output()}`);
    try {
      const response = await fetch(readyUrl);
      if (response.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${service.name} was not ready at ${readyUrl} within ${timeoutMs} ms:\n${service.output()}`);
}

/** What a finished script printed and how it exited. */
export interface ScriptOutcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node <entryPath> [args…]` to its end with exactly the given environment (plus PATH), as a Job or an operator would. */
export function runNodeScript(entryPath: string, env: Record<string, string>, args: readonly string[] = []): Promise<ScriptOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [entryPath, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
