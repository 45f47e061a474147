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

/**
 * Where freePort looks: below Linux's default ephemeral range (32768-60999, from which the OS
 * picks the local port of every outgoing connection and of every listen on port 0). A port taken
 * from that range and handed to a child process can be claimed by any other connection on the
 * machine before the child listens (seen: EADDRINUSE on a proxy's port in CI while parallel test
 * files held hundreds of connections to PostgreSQL and Redis); below it, only another freePort can.
 */
const freePortRange = { first: 20_000, last: 32_767 } as const;

/** Ports this process has handed out, never handed out again (a child may not have bound one yet). */
const handedOut = new Set<number>();

/** Whether nothing listens on 127.0.0.1:port right now. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A TCP port on 127.0.0.1 that was free a moment ago, for a child process to listen on: drawn at
 * random outside the ephemeral range, so no outgoing connection takes it before the child binds,
 * and never twice in one test process (parallel test files are separate processes and draw
 * from 12,768 ports).
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const port = freePortRange.first + Math.floor(Math.random() * (freePortRange.last - freePortRange.first + 1));
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port in ${freePortRange.first}-${freePortRange.last} after 200 tries`);
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
