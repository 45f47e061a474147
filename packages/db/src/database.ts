import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync } from 'node:fs';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';

/** Rows of a query and how many rows it touched. */
export interface QueryResult<Row> {
  rows: Row[];
  rowCount: number;
}

/** Anything SQL can be sent to: the database itself or one open transaction. */
export interface Queryable {
  query<Row = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<QueryResult<Row>>;
  /** Runs a script of several statements with no parameters (migrations). */
  exec(script: string): Promise<void>;
}

/** A service's database: PostgreSQL through a pg pool, or embedded PGlite for the first run. */
export interface Database extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** The schema the service's tables live in; every connection has it first on its search_path. */
  readonly schema: string;
  /**
   * Runs work in one transaction. Serialization failures and deadlocks are retried (up to
   * `retries` times), so work must be safe to run again: it is, as it commits only once.
   */
  transaction<T>(work: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T>;
  close(): Promise<void>;
}

/** How a transaction runs. */
export interface TransactionOptions {
  isolation?: 'read committed' | 'repeatable read' | 'serializable';
  /** Attempts after the first on a serialization failure or deadlock. Default 3. */
  retries?: number;
}

/** Where a service's data lives: a PostgreSQL URL, or a PGlite folder (omitted: in memory). */
export interface DatabaseOptions {
  url?: string | undefined;
  dataDir?: string | undefined;
  /** The service's schema, e.g. `ledger`; created if missing. */
  schema: string;
  /** Connections in the pg pool. Default 10. */
  poolSize?: number;
}

/**
 * Marks the work of an open transaction (and everything it awaits), so that a network call made
 * there can be refused: it would hold a pooled connection and the transaction's row locks for as
 * long as the far side takes, and a stalled peer then stalls every request needing either.
 */
const transactionScope = new AsyncLocalStorage<string>();

/** Thrown by assertOutsideTransaction: a network call was made inside a database transaction. */
class NetworkCallInTransactionError extends Error {
  constructor(what: string) {
    super(`${what} was called inside a database transaction; make network calls before it begins or after it commits`);
    this.name = 'NetworkCallInTransactionError';
  }
}

/**
 * For clients of other services (payment provider, ledger, webhooks, mail): throws
 * NetworkCallInTransactionError when called from inside Database.transaction's work. `what`
 * names the call in the message.
 */
export function assertOutsideTransaction(what: string): void {
  if (transactionScope.getStore() !== undefined) throw new NetworkCallInTransactionError(what);
}

const int8Oid = 20;
const schemaNamePattern = /^[a-z_][a-z0-9_]{0,62}$/;
const retryableSqlStates = new Set(['40001', '40P01']);

/** int8 columns become bigint: money and token counts must never pass through a float. */
const parseInt8 = (value: string): bigint => BigInt(value);

/** Opens the database a service's config points at, and makes sure its schema exists. */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  if (!schemaNamePattern.test(options.schema)) throw new Error(`invalid schema name: ${options.schema}`);
  return options.url ? openPostgres(options.url, options) : openPglite(options);
}

async function openPostgres(url: string, options: DatabaseOptions): Promise<Database> {
  const types = {
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      oid === int8Oid ? parseInt8 : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
  };
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    types,
    options: `-c search_path=${options.schema},public`,
  });
  // An idle client that loses its server emits here; without a listener the process would crash.
  pool.on('error', () => undefined);
  try {
    await pool.query(`CREATE SCHEMA IF NOT EXISTS ${options.schema}`);
  } catch (error) {
    // A service that cannot start must not leave a pool (and its sockets) behind.
    await pool.end().catch(() => undefined);
    throw error;
  }

  const run = async <Row>(client: pg.Pool | pg.PoolClient, text: string, params?: readonly unknown[]) => {
    const result = await client.query(text, params as unknown[] | undefined);
    return { rows: result.rows as Row[], rowCount: result.rowCount ?? 0 };
  };

  return {
    kind: 'postgres',
    schema: options.schema,
    query: (text, params) => run(pool, text, params),
    exec: async (script) => { await pool.query(script); },
    async transaction(work, transactionOptions = {}) {
      const retries = transactionOptions.retries ?? 3;
      for (let attempt = 0; ; attempt++) {
        const client = await pool.connect();
        // A checked-out client has no pool listener: a server that goes away between two queries
        // (a PostgreSQL restart) would emit 'error' unheard and crash the process. Note it instead;
        // the next query rejects, and release(lost) destroys the dead connection.
        let lost: Error | undefined;
        const onLost = (error: Error) => { lost = error; };
        client.on('error', onLost);
        try {
          await client.query(`BEGIN ISOLATION LEVEL ${(transactionOptions.isolation ?? 'read committed').toUpperCase()}`);
          const result = await transactionScope.run(options.schema, () => work({
            query: (text, params) => run(client, text, params),
            exec: async (script) => { await client.query(script); },
          }));
          await client.query('COMMIT');
          return result;
        } catch (error) {
          await client.query('ROLLBACK').catch(() => undefined);
          const sqlState = (error as { code?: string }).code;
          if (attempt < retries && sqlState !== undefined && retryableSqlStates.has(sqlState)) continue;
          throw error;
        } finally {
          client.removeListener('error', onLost);
          client.release(lost);
        }
      }
    },
    close: () => pool.end(),
  };
}

async function openPglite(options: DatabaseOptions): Promise<Database> {
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
  const db = await PGlite.create(options.dataDir ?? 'memory://', { parsers: { [int8Oid]: parseInt8 } });
  await db.exec(`CREATE SCHEMA IF NOT EXISTS ${options.schema}; SET search_path TO ${options.schema}, public;`);
  const run = async <Row>(target: Pick<PGlite, 'query'>, text: string, params?: readonly unknown[]) => {
    const result = await target.query<Row>(text, params as unknown[] | undefined);
    // PGlite reports affectedRows 0 for a SELECT; the rows returned are the count there.
    return { rows: result.rows, rowCount: result.affectedRows || result.rows.length };
  };
  return {
    kind: 'pglite',
    schema: options.schema,
    query: (text, params) => run(db, text, params),
    exec: async (script) => { await db.exec(script); },
    // PGlite has one connection and runs one transaction at a time, so conflicts cannot arise.
    transaction: (work) => db.transaction((tx) => transactionScope.run(options.schema, () => work({
      query: (text, params) => run(tx, text, params),
      exec: async (script) => { await tx.exec(script); },
    }))),
    close: () => db.close(),
  };
}
