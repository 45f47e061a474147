import { randomBytes } from 'node:crypto';
import type { HostResolver } from '@gateway/address-policy';
import { openDatabase, type Database } from '@gateway/db';
import { createLogger, type Logger } from '@gateway/logger';
import { issueSecret } from '@gateway/secrets';
import { serviceTlsEnv, sharedTestPki } from '@gateway/testkit';
import { createAdminApp, type AdminApp } from '../app.ts';
import { loadAdminConfig } from '../config.ts';
import { startFakeLedger, type FakeLedger } from './fake-ledger.ts';

/** An HTTP answer as tests inspect it: status, headers, raw text and parsed JSON. */
export interface HarnessResponse {
  status: number;
  headers: Headers;
  text: string;
  // Tests read arbitrary fields of the JSON they assert on.
  json: any;
}

/** A running admin for tests, with its fake ledger and a platform-admin token. */
export interface AdminHarness {
  app: AdminApp;
  ledger: FakeLedger;
  /** The platform-admin token the admin was bootstrapped with. */
  token: string;
  /** The encryption key (base64) the admin seals credentials with. */
  encryptionKey: string;
  /** http://127.0.0.1:<port> */
  baseUrl: string;
  /** host:port of the config stream. */
  grpcTarget: string;
  /** Calls the admin API with the platform-admin token unless `headers.authorization` overrides it. */
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<HarnessResponse>;
  /** Stops the admin and, unless it was given one, the fake ledger. */
  close(): Promise<void>;
}

/** How a test wants its admin: where the data lives and any extra environment. */
export interface AdminHarnessOptions {
  /** PostgreSQL URL; omitted: in-memory PGlite (or `database`). */
  databaseUrl?: string;
  database?: Database;
  env?: Record<string, string>;
  /** Reuse a running fake ledger (e.g. across an admin restart). */
  ledger?: FakeLedger;
  token?: string;
  encryptionKey?: string;
  logger?: Logger;
  /** Largest config update in one message, bytes. */
  maxConfigUpdateBytes?: number;
  /** Resolves upstream host names for the SSRF checks (a table in tests); default the system resolver. */
  resolveHost?: HostResolver;
  /** Receives the first platform-admin person's setup link (none is issued without it). */
  onSetupLink?: (url: string) => void;
}

/** Starts an admin on free ports against a fake ledger. */
export async function startAdminHarness(options: AdminHarnessOptions = {}): Promise<AdminHarness> {
  const ledger = options.ledger ?? await startFakeLedger();
  const token = options.token ?? issueSecret('adminToken').secret;
  const encryptionKey = options.encryptionKey ?? randomBytes(32).toString('base64');
  const config = loadAdminConfig({
    ...serviceTlsEnv(await sharedTestPki(), 'admin'),
    ADMIN_HTTP_PORT: '0', ADMIN_METRICS_PORT: '0',
    ADMIN_GRPC_PORT: '0',
    LEDGER_GRPC_URL: ledger.target,
    ADMIN_ENCRYPTION_KEY: encryptionKey,
    ADMIN_BOOTSTRAP_TOKEN: token,
    SHUTDOWN_GRACE_MS: '1000',
    LOG_LEVEL: 'silent',
    ...(options.databaseUrl ? { DATABASE_URL: options.databaseUrl } : {}),
    ...options.env,
  });
  // Neither a URL nor a database: an in-memory PGlite of the harness's own, never a folder under
  // the working directory (the admin's default DATA_DIR), which would outlive the test.
  const ownDatabase = options.databaseUrl || options.database ? undefined : await openDatabase({ schema: 'admin' });
  const database = options.database ?? ownDatabase;
  const app = await createAdminApp(config, {
    logger: options.logger ?? createLogger('admin', 'silent'),
    ...(database ? { database } : {}),
    ...(options.maxConfigUpdateBytes === undefined ? {} : { maxConfigUpdateBytes: options.maxConfigUpdateBytes }),
    ...(options.resolveHost === undefined ? {} : { resolveHost: options.resolveHost }),
    ...(options.onSetupLink === undefined ? {} : { onSetupLink: options.onSetupLink }),
  });
  const baseUrl = `http://127.0.0.1:${app.ports.http}`;
  return {
    app, ledger, token, encryptionKey, baseUrl,
    grpcTarget: `127.0.0.1:${app.ports.grpc}`,
    async request(method, path, body, headers = {}) {
      const response = await fetch(`${baseUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await response.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: response.status, headers: response.headers, text, json };
    },
    async close() {
      await app.close();
      await ownDatabase?.close();
      if (!options.ledger) await ledger.close();
    },
  };
}
