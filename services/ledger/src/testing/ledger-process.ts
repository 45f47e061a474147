import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** The ledger's entry point, run as its own process exactly as in production. */
const mainPath = fileURLToPath(new URL('../main.ts', import.meta.url));

/** A ledger started as a separate process for a test. */
export interface LedgerProcess {
  grpcAddress: string;
  /** Everything the process wrote (for diagnosing a failure). */
  output(): string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** A TCP port that was free a moment ago. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * Starts `node services/ledger/src/main.ts` over a PostgreSQL database and waits until its
 * /readyz answers 200 (bounded by timeoutMs; not a timing assertion).
 */
export async function startLedgerProcess(databaseUrl: string, env: Record<string, string> = {}, timeoutMs = 30_000): Promise<LedgerProcess> {
  const [grpcPort, httpPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, [mainPath], {
    env: {
      PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', BIND_HOST: '127.0.0.1',
      LEDGER_GRPC_PORT: String(grpcPort), LEDGER_HTTP_PORT: String(httpPort), ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const chunks: string[] = [];
  child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const handle: LedgerProcess = {
    grpcAddress: `127.0.0.1:${grpcPort}`,
    output: () => chunks.join(''),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`ledger exited with ${child.exitCode}:\n${handle.output()}`);
    try {
      if ((await fetch(`http://127.0.0.1:${httpPort}/readyz`)).status === 200) return handle;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await handle.stop();
      throw new Error(`ledger was not ready within ${timeoutMs} ms:\n${handle.output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
