import { randomBytes } from 'node:crypto';
import { openDatabase, type Database } from '@gateway/db';
import { verifyLedger } from '../src/domain/find-balance-differences.ts';
import { acquireGrant, adjustGrant } from '../src/domain/grants.ts';
import { prepareLedgerSchema } from '../src/ledger-schema.ts';

/** The PostgreSQL server the ledger benchmarks create their databases on (TEST_DATABASE_URL, DATABASE_URL or the local default). */
const benchServerUrl = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A database of its own for one benchmark run: its URL, and how to drop it afterwards. */
export interface BenchDatabase {
  url: string;
  drop(): Promise<void>;
}

/** Creates a fresh database on the benchmark server, so a run never measures (or harms) another's data. */
export async function createBenchDatabase(): Promise<BenchDatabase> {
  const name = `gw_bench_${randomBytes(5).toString('hex')}`;
  const admin = await openDatabase({ url: benchServerUrl, schema: 'public', poolSize: 1 });
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(benchServerUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await admin.close();
      }
    },
  };
}

/** A fresh ledger database for one benchmark, migrated and open; close() closes it and drops it. */
export interface BenchLedger {
  db: Database;
  close(): Promise<void>;
}

/** Creates a database on the benchmark server, brings it to this build's ledger schema and opens a pool of `poolSize` on it. */
export async function openBenchLedger(poolSize: number): Promise<BenchLedger> {
  const benchDatabase = await createBenchDatabase();
  let db: Database | undefined;
  const close = async () => {
    try {
      await db?.close();
    } finally {
      await benchDatabase.drop();
    }
  };
  try {
    db = await openDatabase({ url: benchDatabase.url, schema: 'ledger', poolSize });
    await prepareLedgerSchema(db);
    return { db, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * Holds one credit grant per id on an organisation's project (commercial, an hour, each owned by
 * its own id: one proxy replica each), `wantMicros` each within `sharePercent` of available; throws if one is refused.
 */
export async function holdBenchGrants(db: Database, organisationId: string, grantIds: readonly string[], wantMicros: bigint, sharePercent: number): Promise<void> {
  for (const grantId of grantIds) {
    const granted = await acquireGrant(db, {
      grantId, organisationId, projectId: `${organisationId}-project`, billingMode: 'commercial', minMicros: 1n,
      wantMicros, ttlMs: 3_600_000n, ownerId: grantId,
    }, sharePercent);
    if (granted.result !== 'ok') throw new Error(`bench grant refused: ${granted.result} ${granted.detail}`);
  }
}

/** What a benchmark's money check found. */
export interface BenchMoneyCheck {
  accountsChecked: bigint;
  differences: number;
  debitedExact: boolean;
  heldZero: boolean;
}

/**
 * The money check a ledger benchmark owns, after its load: closes its grants (what they still
 * hold goes back, so nothing stays held), then every account's debits must add up to
 * `expectedDebitedMicros` (`operations` of `what`, each at its cost), nothing may be held, and
 * Verify must find every balance agreeing with the rows. Prints what it found.
 */
export async function checkBenchMoney(db: Database, grantIds: readonly string[], expectedDebitedMicros: bigint, operations: bigint, what: string): Promise<BenchMoneyCheck> {
  for (const grantId of grantIds) await adjustGrant(db, { adjustmentId: `close-${grantId}`, grantId, returnMicros: 0n, close: true, extendTtlMs: 0n, reason: 'bench done' });
  const sums = await db.query<{ debited: string; held: string }>(
    'SELECT sum(debited_micros)::text AS debited, sum(held_micros)::text AS held FROM accounts');
  const { accountsChecked, differences } = await verifyLedger(db);
  const debitedExact = BigInt(sums.rows[0]!.debited) === expectedDebitedMicros;
  const heldZero = BigInt(sums.rows[0]!.held) === 0n;
  console.log(`verify: ${accountsChecked} accounts, ${differences.length} difference(s); debited ${sums.rows[0]!.debited} µ₹ for ${operations} ${what} (${debitedExact ? 'exact' : 'WRONG'}); held ${sums.rows[0]!.held} µ₹`);
  for (const difference of differences) console.log('DIFFERENCE', difference);
  return { accountsChecked, differences: differences.length, debitedExact, heldZero };
}
