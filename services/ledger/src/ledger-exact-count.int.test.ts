import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ledgerV1 } from '@gateway/contracts';
import { callUnary, channelCredentials } from '@gateway/grpc';
import { createTestDatabase, sharedTestPki, testPostgresUrl, testTransportSecurity, type TestDatabase } from '@gateway/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLedgerProcess, type LedgerProcess } from './testing/ledger-process.ts';

const { ReserveResult } = ledgerV1;
const serverUrl = testPostgresUrl();
const verifyCliPath = fileURLToPath(new URL('./verify-cli.ts', import.meta.url));
const deadlineMs = 60_000;

/**
 * Exact count across replicas: two ledger processes on one database, 500 concurrent Reserves
 * against a balance that fits 100. Correctness must come from the database, not a process.
 */
describe.skipIf(!serverUrl)('NO_OVERSPEND: exact count across two ledger processes', () => {
  let database: TestDatabase;
  const processes: LedgerProcess[] = [];
  /** Per process: a client with the proxy's identity (Reserve) and one with the admin's (accounts, balances). */
  const clients: ledgerV1.LedgerServiceClient[] = [];
  const adminClients: ledgerV1.LedgerServiceClient[] = [];

  beforeAll(async () => {
    database = await createTestDatabase(serverUrl!);
    // One after the other: the second finds the schema migrated (the migration lock makes this safe either way).
    for (let index = 0; index < 2; index++) {
      const ledger = await startLedgerProcess(database.url, { LEDGER_DB_POOL_SIZE: '8' });
      processes.push(ledger);
      const pki = await sharedTestPki();
      clients.push(new ledgerV1.LedgerServiceClient(ledger.grpcAddress, channelCredentials(testTransportSecurity(pki, 'proxy'))));
      adminClients.push(new ledgerV1.LedgerServiceClient(ledger.grpcAddress, channelCredentials(testTransportSecurity(pki, 'admin'))));
    }
  }, 90_000);

  afterAll(async () => {
    for (const client of [...clients, ...adminClients]) client.close();
    const codes = await Promise.all(processes.map((ledger) => ledger.stop()));
    await database?.drop();
    expect(codes.every((code) => code === 0)).toBe(true);
  });

  it('lets exactly 100 of 500 Reserves through, leaves available at exactly zero, and verifies clean', async () => {
    const [first, second] = clients as [ledgerV1.LedgerServiceClient, ledgerV1.LedgerServiceClient];
    const [firstAdmin, secondAdmin] = adminClients as [ledgerV1.LedgerServiceClient, ledgerV1.LedgerServiceClient];
    const organisationId = 'org-exact-count';
    const amountMicros = 1_234_567n;
    await callUnary(firstAdmin.openAccount, firstAdmin, { organisationId }, deadlineMs);
    await callUnary(secondAdmin.credit, secondAdmin, { creditId: 'fund-exact', organisationId, amountMicros: 100n * amountMicros, reason: 'exact count', purchased: false }, deadlineMs);

    const responses = await Promise.all(Array.from({ length: 500 }, (_, index) => {
      const client = index % 2 === 0 ? first : second;
      return callUnary(client.reserve, client, {
        reservationId: `exact-${index}`, organisationId, projectId: 'project-exact', billingMode: ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL,
        amountMicros, ttlMs: 600_000n, modelSlug: 'model-a',
      }, deadlineMs);
    }));
    const ok = responses.filter((response) => response.result === ReserveResult.RESERVE_RESULT_OK);
    expect(ok).toHaveLength(100);
    expect(responses.filter((response) => response.result === ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE)).toHaveLength(400);
    // Each replica decided all 250 of its requests against the shared database. Which replica
    // wins the balance is the database's call: with group commit, one replica's batch may take
    // all of it before the other's commits, so the split between them is not asserted.
    for (const replica of [0, 1]) {
      const decided = responses.filter((response, index) => index % 2 === replica && (
        response.result === ReserveResult.RESERVE_RESULT_OK || response.result === ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE));
      expect(decided, `replica ${replica}`).toHaveLength(250);
    }

    const balance = await callUnary(firstAdmin.getBalance, firstAdmin, { organisationId }, deadlineMs);
    expect(balance).toMatchObject({ creditedMicros: 123_456_700n, availableMicros: 0n, heldMicros: 123_456_700n, debitedMicros: 0n });
    const verification = await callUnary(secondAdmin.verify, secondAdmin, {}, deadlineMs);
    expect(verification).toEqual({ accountsChecked: 1n, differences: [] });

    // The command-line verify agrees, and exits 1 with the difference printed once a balance is broken.
    const run = promisify(execFile);
    const clean = await run(process.execPath, [verifyCliPath], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: database.url } });
    expect(clean.stdout).toBe('verify: 1 accounts checked, 0 difference(s)\n');
    const { openDatabase } = await import('@gateway/db');
    const db = await openDatabase({ url: database.url, schema: 'ledger', poolSize: 1 });
    try {
      await db.query('UPDATE accounts SET held_micros = held_micros - 5, available_micros = available_micros + 5 WHERE organisation_id = $1', [organisationId]);
    } finally {
      await db.close();
    }
    const broken = await run(process.execPath, [verifyCliPath], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: database.url } })
      .then(() => ({ code: 0, stdout: '' }), (error: { code: number; stdout: string }) => error);
    expect(broken.code).toBe(1);
    expect(broken.stdout).toContain(`DIFFERENCE organisation=${organisationId} check=holds balance=held stored=123456695 recomputed=123456700 delta=5`);
  }, 120_000);
});
