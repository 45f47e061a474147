import type { Database, Queryable } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { hashSecret, hashesEqual, hintOf, isWellFormedSecret, issueSecret } from '@gateway/secrets';
import type { Actor } from '../../common/domain/actor.ts';
import type { Page, PageRequest } from '../../common/domain/admin-records.ts';
import { newId } from '../../common/domain/ids.ts';

/** What bootstrapping the platform-admin token did at start. */
export type BootstrapOutcome =
  /** A token already existed; nothing changed (ADMIN_BOOTSTRAP_TOKEN, if set, was ignored). */
  | { kind: 'existing'; bootstrapTokenIgnored: boolean }
  /** The hash of ADMIN_BOOTSTRAP_TOKEN was stored. */
  | { kind: 'stored_from_env' }
  /** A token was issued and handed over; it is not kept anywhere but in the operator's hands. */
  | { kind: 'issued' }
  /** No token exists and none could be handed to anyone, so none was issued. */
  | { kind: 'none' };

/** Where a token came from. */
export type TokenOrigin = 'bootstrap_env' | 'bootstrap_issued' | 'cli' | 'api';

/** What may be shown about an admin-API token: never the secret, never its hash. */
export interface AdminTokenInfo {
  id: string;
  name: string;
  /** null: a platform-admin token; else the only organisation the token sees. */
  organisationId: string | null;
  /** e.g. `gwadm_…x7Qa`. */
  hint: string;
  origin: TokenOrigin;
  createdAt: Date;
  /** null while the token works. */
  revokedAt: Date | null;
}

interface TokenRow {
  id: string;
  name: string;
  organisation_id: string | null;
  hint: string;
  origin: TokenOrigin;
  created_at: Date;
  revoked_at: Date | null;
}

const selectToken = 'SELECT id, name, organisation_id, hint, origin, created_at, revoked_at FROM admin_tokens';

function toTokenInfo(row: TokenRow): AdminTokenInfo {
  return {
    id: row.id, name: row.name, organisationId: row.organisation_id, hint: row.hint, origin: row.origin,
    createdAt: row.created_at, revokedAt: row.revoked_at,
  };
}

/**
 * Makes sure a platform admin can log in. When no active platform-admin token exists: stores
 * the hash of `bootstrapToken` if given, else issues a token and gives it to `handOver` (to be
 * shown once), else issues nothing, since a token nobody sees would lock the admin out for
 * good. `handOver` runs before the commit: if it throws, no token is stored.
 */
export async function bootstrapPlatformAdminToken(
  db: Database,
  options: { bootstrapToken?: string | undefined; handOver?: ((secret: string) => void) | undefined },
): Promise<BootstrapOutcome> {
  if (options.bootstrapToken !== undefined && !isWellFormedSecret('adminToken', options.bootstrapToken)) {
    throw new Error('ADMIN_BOOTSTRAP_TOKEN is not a well-formed gwadm_ token');
  }
  return db.transaction(async (tx) => {
    // Replicas starting together must not both issue a token.
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', ['gateway-admin:bootstrap-token']);
    const { rows } = await tx.query('SELECT 1 FROM admin_tokens WHERE revoked_at IS NULL AND organisation_id IS NULL LIMIT 1');
    if (rows.length > 0) return { kind: 'existing', bootstrapTokenIgnored: options.bootstrapToken !== undefined };
    if (options.bootstrapToken !== undefined) {
      await insertToken(tx, { tokenHash: hashSecret(options.bootstrapToken), hint: hintOf(options.bootstrapToken), origin: 'bootstrap_env', name: 'bootstrap', organisationId: null });
      return { kind: 'stored_from_env' };
    }
    if (!options.handOver) return { kind: 'none' };
    const issued = issueSecret('adminToken');
    await insertToken(tx, { tokenHash: issued.hash, hint: issued.hint, origin: 'bootstrap_issued', name: 'bootstrap', organisationId: null });
    options.handOver(issued.secret);
    return { kind: 'issued' };
  });
}

async function insertToken(
  tx: Queryable,
  token: { tokenHash: string; hint: string; origin: TokenOrigin; name: string; organisationId: string | null },
): Promise<string> {
  const id = newId('adminToken');
  await tx.query(
    'INSERT INTO admin_tokens (id, token_hash, hint, origin, name, organisation_id) VALUES ($1, $2, $3, $4, $5, $6)',
    [id, token.tokenHash, token.hint, token.origin, token.name, token.organisationId],
  );
  return id;
}

/**
 * Who a presented bearer value authenticates, or undefined. Malformed values are refused before
 * any lookup; the row is found by the hash (a 256-bit secret's hash is not guessable, so the
 * index lookup leaks nothing useful) and the hashes are then compared in constant time.
 */
export async function authenticateAdminToken(db: Queryable, presented: string): Promise<Actor | undefined> {
  if (!isWellFormedSecret('adminToken', presented)) return undefined;
  const presentedHash = hashSecret(presented);
  const { rows } = await db.query<{ id: string; token_hash: string; organisation_id: string | null }>(
    'SELECT id, token_hash, organisation_id FROM admin_tokens WHERE token_hash = $1 AND revoked_at IS NULL', [presentedHash],
  );
  const row = rows[0];
  if (!row || !hashesEqual(row.token_hash, presentedHash)) return undefined;
  return row.organisation_id === null
    ? { kind: 'platform_admin', tokenId: row.id }
    : { kind: 'organisation_token', tokenId: row.id, organisationId: row.organisation_id };
}

/** Issues a token (platform-wide when organisationId is null); the secret is returned once, only its hash is stored. */
export async function issueAdminToken(
  tx: Queryable,
  options: { name: string; organisationId: string | null; origin: TokenOrigin },
): Promise<{ token: AdminTokenInfo; secret: string }> {
  const issued = issueSecret('adminToken');
  const id = await insertToken(tx, { tokenHash: issued.hash, hint: issued.hint, origin: options.origin, name: options.name, organisationId: options.organisationId });
  return { token: (await findAdminToken(tx, id))!, secret: issued.secret };
}

/** The token with this id, or undefined. */
export async function findAdminToken(db: Queryable, id: string): Promise<AdminTokenInfo | undefined> {
  const { rows } = await db.query<TokenRow>(`${selectToken} WHERE id = $1`, [id]);
  return rows[0] ? toTokenInfo(rows[0]) : undefined;
}

/** A page of tokens in creation order: platform-admin tokens (organisationId null) or one organisation's. */
export async function listAdminTokens(db: Queryable, organisationId: string | null, page: PageRequest): Promise<Page<AdminTokenInfo>> {
  const { rows } = await db.query<TokenRow>(
    `${selectToken}
     WHERE organisation_id IS NOT DISTINCT FROM $1
       AND ($2::text IS NULL OR (created_at, id) > (SELECT a.created_at, a.id FROM admin_tokens a WHERE a.id = $2))
     ORDER BY created_at, id
     LIMIT $3`,
    [organisationId, page.after ?? null, page.limit + 1],
  );
  return { items: rows.slice(0, page.limit).map(toTokenInfo), hasMore: rows.length > page.limit };
}

/**
 * Revokes a token (idempotent: revoking a revoked token changes nothing). The last active
 * platform-admin token cannot be revoked: nobody could administer the platform afterwards.
 * Resolves the token before and after.
 */
export async function revokeAdminToken(tx: Queryable, id: string): Promise<{ before: AdminTokenInfo; after: AdminTokenInfo }> {
  const { rows } = await tx.query<TokenRow>(`${selectToken} WHERE id = $1 FOR UPDATE`, [id]);
  if (!rows[0]) throw new Error(`revokeAdminToken: no token ${id}`);
  const before = toTokenInfo(rows[0]);
  if (before.revokedAt !== null) return { before, after: before };
  if (before.organisationId === null) {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', ['gateway-admin:bootstrap-token']);
    const active = await tx.query<{ count: bigint }>('SELECT count(*)::bigint AS count FROM admin_tokens WHERE organisation_id IS NULL AND revoked_at IS NULL');
    if (active.rows[0]!.count <= 1n) {
      throw new GatewayError('conflict', { publicMessage: 'This is the last active platform-admin token; issue another before revoking it.', param: 'id' });
    }
  }
  await tx.query('UPDATE admin_tokens SET revoked_at = clock_timestamp() WHERE id = $1', [id]);
  return { before, after: (await findAdminToken(tx, id))! };
}
