import { fileURLToPath } from 'node:url';
import { freePort, serviceTlsEnv, sharedTestPki, startServiceProcess, waitUntilReady } from '@gateway/testkit';

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

/**
 * Starts `node services/ledger/src/main.ts` over a PostgreSQL database and waits until its
 * /readyz answers 200 (bounded by timeoutMs; not a timing assertion).
 */
export async function startLedgerProcess(databaseUrl: string, env: Record<string, string> = {}, timeoutMs = 30_000): Promise<LedgerProcess> {
  const [grpcPort, httpPort] = [await freePort(), await freePort()];
  const service = startServiceProcess('ledger', mainPath, {
    // The ledger's certificate from the test process's PKI: clients dial it with sharedTestPki() identities.
    ...serviceTlsEnv(await sharedTestPki(), 'ledger'),
    DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', BIND_HOST: '127.0.0.1',
    LEDGER_GRPC_PORT: String(grpcPort), LEDGER_HTTP_PORT: String(httpPort), LEDGER_METRICS_PORT: '0', ...env,
  });
  try {
    await waitUntilReady(service, `http://127.0.0.1:${httpPort}/readyz`, timeoutMs);
  } catch (error) {
    await service.stop();
    throw error;
  }
  return { grpcAddress: `127.0.0.1:${grpcPort}`, output: service.output, stop: service.stop };
}
