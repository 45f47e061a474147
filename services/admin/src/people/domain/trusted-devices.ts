import { randomBytes } from 'node:crypto';
import type { Queryable } from '@gateway/db';
import { hashSecret } from '@gateway/secrets';

/**
 * How long a browser stays trusted for an email after it last signed in with its password, ms
 * (each sign-in re-issues the device token, so a browser in use stays trusted).
 */
export const trustedDeviceLifetimeMs = 90 * 24 * 60 * 60_000;

/** How many device tokens (one per email) one browser's cookie carries; the oldest drops off. */
export const deviceTokensPerBrowser = 5;

/** A device token is 32 random bytes in base64url: 43 characters (never contains the cookie's `.` separator). */
const deviceTokenPattern = /^[A-Za-z0-9_-]{43}$/;

/** A device token just issued: the browser keeps the token, the database only its SHA-256. */
export interface IssuedDevice {
  token: string;
  /** The presented token it replaces (the same browser's earlier one for this email), if any. */
  replaces: string | undefined;
}

/** A trusted device a sign-in attempt presented: its token and the token's SHA-256 (the row's id). */
export interface PresentedDevice {
  token: string;
  idHash: string;
}

/**
 * The device among the presented tokens that is trusted for this email now (issued after a
 * sign-in with its password, not expired, not forgotten); undefined when none is. Malformed
 * tokens and those beyond the per-browser count are ignored.
 */
export async function trustedDeviceFor(db: Queryable, email: string, tokens: readonly string[], now: Date): Promise<PresentedDevice | undefined> {
  const presented = tokens.filter((token) => deviceTokenPattern.test(token)).slice(0, deviceTokensPerBrowser)
    .map((token) => ({ token, idHash: hashSecret(token) }));
  if (presented.length === 0) return undefined;
  const { rows } = await db.query<{ id_hash: string }>(
    'SELECT id_hash FROM trusted_devices WHERE id_hash = ANY($1::text[]) AND email = $2 AND expires_at > $3 LIMIT 1',
    [presented.map((device) => device.idHash), email, now],
  );
  return rows[0] === undefined ? undefined : presented.find((device) => device.idHash === rows[0]!.id_hash);
}

/**
 * Trusts the browser that just proved it knows the email's password: a new device token (the
 * one it presented for this email, if any, is replaced), and expired devices are pruned.
 */
export async function trustDevice(db: Queryable, email: string, now: Date, presented: PresentedDevice | undefined): Promise<IssuedDevice> {
  const token = randomBytes(32).toString('base64url');
  await db.query('DELETE FROM trusted_devices WHERE expires_at <= $1 OR id_hash = $2', [now, presented?.idHash ?? null]);
  await db.query(
    'INSERT INTO trusted_devices (id_hash, email, created_at, expires_at) VALUES ($1, $2, $3, $4)',
    [hashSecret(token), email, now, new Date(now.getTime() + trustedDeviceLifetimeMs)],
  );
  return { token, replaces: presented?.token };
}

/** Forgets every trusted device of an email: its password was set anew, so earlier proofs of it no longer count. */
export async function forgetTrustedDevices(db: Queryable, email: string): Promise<void> {
  await db.query('DELETE FROM trusted_devices WHERE email = $1', [email]);
}
