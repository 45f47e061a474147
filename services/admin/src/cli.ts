/**
 * The admin's command line, for what must work before anyone holds a token, and for operations:
 *
 *   node services/admin/src/cli.ts create-platform-admin-token --name "Asha (ops)"
 *   node services/admin/src/cli.ts list-platform-admin-tokens
 *   node services/admin/src/cli.ts revoke-platform-admin-token adm_…
 *   node services/admin/src/cli.ts reencrypt [--check] [--batch-size 100]
 *
 * It reads DATABASE_URL / DATA_DIR like the service (and migrates the schema, so it works on a
 * fresh database); `reencrypt` also reads ADMIN_ENCRYPTION_KEY and ADMIN_ENCRYPTION_KEYS_PREVIOUS
 * (with the embedded database and no ADMIN_ENCRYPTION_KEY: the key `pnpm start` keeps in DATA_DIR).
 * A new token's secret goes to stdout once; only its hash is stored. With the embedded database
 * (no DATABASE_URL), stop the admin first: PGlite allows one process at a time.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { commonEnv, loadConfig, z } from '@gateway/config';
import { migrate, openDatabase, type Database } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import type { Actor } from './common/domain/actor.ts';
import { findAdminToken, issueAdminToken, listAdminTokens, revokeAdminToken, type AdminTokenInfo } from './tenancy/domain/admin-tokens.ts';
import { changedFields, recordAuditEvent } from './common/domain/audit-log.ts';
import { isId } from './common/domain/ids.ts';
import { createCredentialCipher, type CredentialCipher } from './common/domain/credential-cipher.ts';
import { adminConfigSchema, embeddedEncryptionKeyFile } from './config.ts';
import { formatReencryptReport, outstandingCount, reencryptSealedValues } from './key-rotation/reencrypt.ts';

/** The environment the command line reads: where the admin's data is. */
export const adminCliConfigSchema = z.object({
  DATABASE_URL: commonEnv.postgresUrl.optional(),
  DATA_DIR: z.string().min(1).default('.data'),
  ADMIN_ENCRYPTION_KEY: adminConfigSchema.shape.ADMIN_ENCRYPTION_KEY.optional(),
  ADMIN_ENCRYPTION_KEYS_PREVIOUS: adminConfigSchema.shape.ADMIN_ENCRYPTION_KEYS_PREVIOUS,
});

/** What a command may need besides the database: the cipher (`reencrypt` only; absent when no key is configured). */
export interface AdminCliContext {
  cipher?: CredentialCipher;
}

const cliActor: Actor = { kind: 'cli' };
const tokenAuditFields = { name: 'name', organisationId: 'organisation_id', hint: 'hint', revokedAt: 'revoked_at' };
const usage = `usage:
  node services/admin/src/cli.ts create-platform-admin-token --name <what it is for>
  node services/admin/src/cli.ts list-platform-admin-tokens
  node services/admin/src/cli.ts revoke-platform-admin-token <token id>
  node services/admin/src/cli.ts reencrypt [--check] [--batch-size <rows per read, 1..10000>]
`;

/** What a command printed and its exit code. */
export interface CliOutcome {
  exitCode: number;
  stdout: string;
  stderr: string;
}

function tokenLine(token: AdminTokenInfo): string {
  const state = token.revokedAt === null ? 'active' : `revoked ${token.revokedAt.toISOString()}`;
  return `${token.id}  ${token.hint}  ${token.origin.padEnd(16)}  ${token.createdAt.toISOString()}  ${state}  ${token.name}`;
}

/** Runs one command against an open database (what the process and the tests call). */
export async function runAdminCli(db: Database, argv: readonly string[], context: AdminCliContext = {}): Promise<CliOutcome> {
  const [command, ...rest] = argv;
  const fail = (message: string, exitCode = 2): CliOutcome => ({ exitCode, stdout: '', stderr: `${message}\n` });
  try {
    switch (command) {
      case 'create-platform-admin-token': {
        const { values } = parseArgs({ args: [...rest], options: { name: { type: 'string' } }, strict: true });
        const name = values.name?.trim() ?? '';
        if (name.length < 1 || name.length > 200) return fail(`--name is required: 1..200 characters saying what the token is for\n${usage}`);
        const issued = await db.transaction(async (tx) => {
          const created = await issueAdminToken(tx, { name, organisationId: null, origin: 'cli' });
          await recordAuditEvent(tx, {
            actor: cliActor, organisationId: null, action: 'admin_token.create', resourceType: 'admin_token', resourceId: created.token.id,
            changes: changedFields(undefined, created.token, tokenAuditFields),
          });
          return created;
        });
        return {
          exitCode: 0,
          stdout: [
            `Platform-admin token ${issued.token.id} ("${name}"). It is shown ONCE and stored only as a hash:`,
            '', `  ${issued.secret}`, '',
            `  export GATEWAY_ADMIN_TOKEN='${issued.secret}'`, '',
          ].join('\n'),
          stderr: '',
        };
      }
      case 'list-platform-admin-tokens': {
        if (rest.length > 0) return fail(usage);
        const lines: string[] = [];
        let after: string | undefined;
        for (;;) {
          const page = await listAdminTokens(db, null, { limit: 100, after });
          lines.push(...page.items.map(tokenLine));
          if (!page.hasMore) break;
          after = page.items.at(-1)!.id;
        }
        return { exitCode: 0, stdout: lines.length > 0 ? `${lines.join('\n')}\n` : 'no platform-admin tokens\n', stderr: '' };
      }
      case 'revoke-platform-admin-token': {
        const [id, ...extra] = rest;
        if (id === undefined || extra.length > 0) return fail(usage);
        const token = isId('adminToken', id) ? await findAdminToken(db, id) : undefined;
        if (!token || token.organisationId !== null) return fail('no platform-admin token has this id', 1);
        const revoked = await db.transaction(async (tx) => {
          const { before, after } = await revokeAdminToken(tx, id);
          if (before.revokedAt === null) {
            await recordAuditEvent(tx, {
              actor: cliActor, organisationId: null, action: 'admin_token.revoke', resourceType: 'admin_token', resourceId: id,
              changes: changedFields(before, after, tokenAuditFields),
            });
          }
          return after;
        });
        return { exitCode: 0, stdout: `${tokenLine(revoked)}\n`, stderr: '' };
      }
      case 'reencrypt': {
        const { values } = parseArgs({ args: [...rest], options: { check: { type: 'boolean' }, 'batch-size': { type: 'string' } }, strict: true });
        const batchSize = Number(values['batch-size'] ?? '100');
        if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) return fail(`--batch-size must be a whole number 1..10000\n${usage}`);
        if (!context.cipher) return fail('reencrypt needs ADMIN_ENCRYPTION_KEY (the key to seal under) and ADMIN_ENCRYPTION_KEYS_PREVIOUS (the keys that still open)');
        const report = await reencryptSealedValues(db, context.cipher, { checkOnly: values.check === true, batchSize });
        // Exit 1 while anything still needs a previous key or does not open: scripts may gate dropping a key on it.
        return { exitCode: outstandingCount(report) > 0 ? 1 : 0, stdout: formatReencryptReport(report), stderr: '' };
      }
      default:
        return fail(command === undefined ? usage : `unknown command ${JSON.stringify(command)}\n${usage}`);
    }
  } catch (error) {
    if (error instanceof GatewayError) return fail(error.publicMessage, 1);
    if (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS')) return fail(`${error.message}\n${usage}`);
    throw error;
  }
}

/** The data folder the caller means: through `pnpm --filter … cli` the cwd is the package, so DATA_DIR is resolved where the caller stood. */
function callersDataDir(config: z.infer<typeof adminCliConfigSchema>): string {
  return resolve(process.env.INIT_CWD ?? process.cwd(), config.DATA_DIR);
}

/** The cipher of the configured keys; with the embedded database and no key set, the key `pnpm start` generated into DATA_DIR. */
function cliCipher(config: z.infer<typeof adminCliConfigSchema>): CredentialCipher | undefined {
  const keptKey = join(callersDataDir(config), embeddedEncryptionKeyFile);
  const current = config.ADMIN_ENCRYPTION_KEY
    ?? (config.DATABASE_URL === undefined && existsSync(keptKey) ? readFileSync(keptKey, 'utf8').trim() : undefined);
  return current === undefined ? undefined : createCredentialCipher(current, config.ADMIN_ENCRYPTION_KEYS_PREVIOUS);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const config = loadConfig('admin', adminCliConfigSchema, process.env);
  const db = await openDatabase({
    url: config.DATABASE_URL,
    dataDir: config.DATABASE_URL ? undefined : join(callersDataDir(config), 'admin'),
    schema: 'admin',
    poolSize: 1,
  });
  try {
    await migrate(db, fileURLToPath(new URL('../migrations', import.meta.url)));
    const outcome = await runAdminCli(db, process.argv.slice(2), { cipher: cliCipher(config) });
    process.stdout.write(outcome.stdout);
    process.stderr.write(outcome.stderr);
    process.exitCode = outcome.exitCode;
  } finally {
    await db.close();
  }
}
