import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { ledgerV1 } from '@gateway/contracts';
import { openDatabase } from '@gateway/db';
import { callUnary, channelCredentials } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import { createTestDatabase, serviceTlsEnv, sharedTestPki, testPostgresUrl, testTransportSecurity } from '@gateway/testkit';
import { describe, expect, it } from 'vitest';
import { createLedgerApp } from './app.ts';
import { loadLedgerConfig } from './config.ts';
import { startTestLedger, uniqueId } from './testing/start-test-ledger.ts';

const serverUrl = testPostgresUrl();
const pki = await sharedTestPki();
const testEnv = { ...serviceTlsEnv(pki, 'ledger'), LEDGER_GRPC_PORT: '0', LEDGER_HTTP_PORT: '0', LEDGER_METRICS_PORT: '0', LOG_LEVEL: 'silent', SHUTDOWN_GRACE_MS: '2000' };
/** Credentials of the admin, the caller of the methods these tests use. */
const adminCredentials = () => channelCredentials(testTransportSecurity(pki, 'admin'));

describe('ledger app', () => {
  it('answers probes, echoes request ids, and after close() leaves no port open', async () => {
    const ledger = await startTestLedger('pglite');
    const base = `http://127.0.0.1:${ledger.app.ports.http}`;
    try {
      expect(ledger.app.isReady()).toBe(true);
      const health = await fetch(`${base}/healthz`, { headers: { 'x-request-id': 'probe-1' } });
      expect(health.status).toBe(200);
      expect(health.headers.get('x-request-id')).toBe('probe-1');
      expect(await health.json()).toEqual({ status: 'ok' });
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: 'ready' });
      const missing = await fetch(`${base}/v1/anything`);
      expect(missing.status).toBe(404);
      expect((await missing.json() as { error: { code: string } }).error.code).toBe('not_found');
    } finally {
      await ledger.close();
    }
    expect(ledger.app.isReady()).toBe(false);
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
    const client = new ledgerV1.LedgerServiceClient(`127.0.0.1:${ledger.app.ports.grpc}`, adminCredentials());
    try {
      const error = await callUnary(client.getBalance, client, { organisationId: 'org' }, 2_000).then(() => undefined, (caught: unknown) => caught as ServiceError);
      expect(error?.code).toBe(GrpcStatus.UNAVAILABLE);
    } finally {
      client.close();
    }
  });

  it('migrates a database it is given and leaves it open for its owner', async () => {
    const database = await openDatabase({ schema: 'ledger' });
    try {
      const app = await createLedgerApp(loadLedgerConfig(testEnv), { database, logger: createLogger('ledger', 'silent') });
      await app.close();
      const { rows } = await database.query<{ count: bigint }>('SELECT count(*) AS count FROM schema_migrations');
      // Every migration in services/ledger/migrations applied.
      const migrations = readdirSync(fileURLToPath(new URL('../migrations/', import.meta.url))).filter((name) => /^\d{4}_.*\.sql$/.test(name));
      expect(migrations.length).toBeGreaterThanOrEqual(16);
      expect(rows[0]!.count).toBe(BigInt(migrations.length));
    } finally {
      await database.close();
    }
  });

  it('refuses to start when its database cannot be reached', async () => {
    const config = loadLedgerConfig({ ...testEnv, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
    await expect(createLedgerApp(config, { logger: createLogger('ledger', 'silent') })).rejects.toThrow();
  });

  it.skipIf(!serverUrl)('answers an unexpected failure with INTERNAL and no internal detail', async () => {
    const testDatabase = await createTestDatabase(serverUrl!);
    const app = await createLedgerApp(loadLedgerConfig({ ...testEnv, DATABASE_URL: testDatabase.url }), { logger: createLogger('ledger', 'silent') });
    const client = new ledgerV1.LedgerServiceClient(`127.0.0.1:${app.ports.grpc}`, adminCredentials());
    const database = await openDatabase({ url: testDatabase.url, schema: 'ledger', poolSize: 1 });
    try {
      await database.query('ALTER TABLE usage_records RENAME TO usage_records_gone');
      const error = await callUnary(client.listUsage, client, ledgerV1.ListUsageRequest.fromPartial({ organisationId: 'org-x' }), 5_000)
        .then(() => undefined, (caught: unknown) => caught as ServiceError);
      expect(error?.code).toBe(GrpcStatus.INTERNAL);
      expect(error?.details).toBe('The gateway encountered an internal error.');
      expect(error?.details).not.toContain('usage_records');
    } finally {
      client.close();
      await app.close();
      await database.close();
      await testDatabase.drop();
    }
  });

  it('runs as a process: serves, then on SIGTERM turns not ready, drains and exits 0', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ledger-main-'));
    const mainPath = fileURLToPath(new URL('./main.ts', import.meta.url));
    const child = spawn(process.execPath, [mainPath], {
      env: { PATH: process.env.PATH, ...serviceTlsEnv(pki, 'ledger'), DATA_DIR: dataDir, LEDGER_GRPC_PORT: '0', LEDGER_HTTP_PORT: '0', LEDGER_METRICS_PORT: '0', LOG_LEVEL: 'info', SHUTDOWN_GRACE_MS: '2000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const lines: Array<Record<string, unknown>> = [];
    const started = new Promise<{ grpc: number; http: number }>((resolve, reject) => {
      createInterface({ input: child.stdout }).on('line', (line) => {
        const entry = JSON.parse(line) as Record<string, unknown>;
        lines.push(entry);
        if (entry.msg === 'ledger started') resolve(entry.ports as { grpc: number; http: number });
      });
      void exited.then((code) => reject(new Error(`ledger exited early with ${code}`)));
    });
    try {
      const ports = await started;
      expect((await fetch(`http://127.0.0.1:${ports.http}/readyz`)).status).toBe(200);
      const client = new ledgerV1.LedgerServiceClient(`127.0.0.1:${ports.grpc}`, adminCredentials());
      const organisationId = uniqueId('org');
      const opened = await callUnary(client.openAccount, client, { organisationId }, 5_000);
      // A read (the dashboard polls them) is logged at debug: not at this process's info level.
      await callUnary(client.getBalance, client, { organisationId }, 5_000);
      client.close();
      expect(opened.result).toBe(ledgerV1.OpenAccountResult.OPEN_ACCOUNT_RESULT_OK);

      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      const messages = lines.map((entry) => entry.msg);
      expect(messages).toContain('stopping: not ready, draining');
      expect(messages).toContain('ledger stopped');
      expect(lines.every((entry) => entry.service === 'ledger')).toBe(true);
      expect(lines.filter((entry) => entry.msg === 'ledger call')).toEqual([expect.objectContaining({ method: 'OpenAccount', outcome: 'ok', organisationId })]);
    } finally {
      child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('refuses to start with a bad environment and names every bad variable', async () => {
    const child = spawn(process.execPath, [fileURLToPath(new URL('./main.ts', import.meta.url))], {
      env: { PATH: process.env.PATH, LEDGER_GRPC_PORT: 'grpc', LEDGER_SWEEP_INTERVAL_MS: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    const code = await new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
    expect(code).toBe(1);
    expect(stderr).toContain('LEDGER_GRPC_PORT');
    expect(stderr).toContain('LEDGER_SWEEP_INTERVAL_MS');
  });
});
