import type { Database, Queryable } from '@gateway/db';
import { hashSecret, hashesEqual, hintOf, isWellFormedSecret, issueSecret } from '@gateway/secrets';
import { newId } from './ids.ts';

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

/**
 * Makes sure a platform admin can log in. When no active token exists: stores the hash of
 * `bootstrapToken` if given, else issues a token and gives it to `handOver` (to be shown once),
 * else issues nothing, since a token nobody sees would lock the admin out for good. `handOver`
 * runs before the commit: if it throws, no token is stored.
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
    const { rows } = await tx.query('SELECT 1 FROM platform_admin_tokens WHERE revoked_at IS NULL LIMIT 1');
    if (rows.length > 0) return { kind: 'existing', bootstrapTokenIgnored: options.bootstrapToken !== undefined };
    if (options.bootstrapToken !== undefined) {
      await insertToken(tx, hashSecret(options.bootstrapToken), hintOf(options.bootstrapToken), 'bootstrap_env');
      return { kind: 'stored_from_env' };
    }
    if (!options.handOver) return { kind: 'none' };
    const issued = issueSecret('adminToken');
    await insertToken(tx, issued.hash, issued.hint, 'bootstrap_issued');
    options.handOver(issued.secret);
    return { kind: 'issued' };
  });
}

async function insertToken(tx: Queryable, tokenHash: string, hint: string, origin: string): Promise<void> {
  await tx.query(
    'INSERT INTO platform_admin_tokens (id, token_hash, hint, origin) VALUES ($1, $2, $3, $4)',
    [newId('adminToken'), tokenHash, hint, origin],
  );
}

/**
 * Whether a presented bearer value is an active platform-admin token. Malformed values are
 * refused before any lookup; the hash is compared in constant time against every active token.
 */
export async function isPlatformAdminToken(db: Queryable, presented: string): Promise<boolean> {
  if (!isWellFormedSecret('adminToken', presented)) return false;
  const presentedHash = hashSecret(presented);
  const { rows } = await db.query<{ token_hash: string }>('SELECT token_hash FROM platform_admin_tokens WHERE revoked_at IS NULL');
  let matched = false;
  // No early exit: the time taken does not depend on which token matched.
  for (const row of rows) matched = hashesEqual(row.token_hash, presentedHash) || matched;
  return matched;
}
