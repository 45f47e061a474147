import { randomBytes } from 'node:crypto';
import { openDatabase } from '@gateway/db';

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
