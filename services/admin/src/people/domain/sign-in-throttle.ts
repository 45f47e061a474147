import type { Queryable } from '@gateway/db';

/**
 * How many failed sign-ins a window allows (docs/people.md, "Sign-in throttling"). An untrusted
 * client is limited per account (email, known or not: the answer must not tell which emails
 * exist) and per client address (one machine trying many emails); a trusted device (a browser
 * that signed in with the email's password before) is limited on its own failures only, so other
 * people's failures never lock it out.
 */
export const signInLimits = { perAccount: 5, perAddress: 30, perTrustedDevice: 5, windowMs: 15 * 60_000 } as const;

/** Who is trying to sign in, at what time. */
export interface SignInAttempt {
  /** Lower-cased and trimmed. */
  email: string;
  clientAddress: string;
  now: Date;
  /** SHA-256 of the trusted device's token when the attempt presented one valid for `email`. */
  trustedDeviceIdHash?: string | undefined;
}

/** How an attempt is throttled: the seconds until it may try again (for Retry-After), and the attempt as it counts. */
export interface SignInVerdict {
  /** Undefined: not throttled. */
  retryAfterSeconds: number | undefined;
  /**
   * The attempt as its failure would be recorded: a trusted device that used up its own limit
   * counts as an untrusted client from then on (it is no better than an unknown browser).
   */
  attempt: SignInAttempt;
}

/** The limit-th most recent failure among `where`'s rows in the window, as an SQL branch ($1 window start). */
function limitReachedAt(where: string, limitParameter: string): string {
  return `(SELECT occurred_at FROM sign_in_failures WHERE ${where} AND occurred_at > $1 ORDER BY occurred_at DESC OFFSET ${limitParameter} LIMIT 1)`;
}

/** Seconds from `now` until the earliest of the reached limits frees a try (at least 1); undefined when none is reached. */
function secondsUntilFree(rows: { occurred_at: Date }[], now: Date): number | undefined {
  if (rows.length === 0) return undefined;
  const freeAtMs = Math.max(...rows.map((row) => row.occurred_at.getTime() + signInLimits.windowMs));
  return Math.max(1, Math.ceil((freeAtMs - now.getTime()) / 1000));
}

/**
 * Whether this attempt may try a password now. A trusted device is refused only after its own
 * `perTrustedDevice` failures, and then falls back to the untrusted rules; an untrusted client is
 * refused while the email has `perAccount` untrusted failures or the address `perAddress`.
 */
export async function signInVerdict(db: Queryable, attempt: SignInAttempt): Promise<SignInVerdict> {
  const windowStart = new Date(attempt.now.getTime() - signInLimits.windowMs);
  if (attempt.trustedDeviceIdHash !== undefined) {
    const { rows } = await db.query<{ occurred_at: Date }>(
      limitReachedAt('device_id_hash = $2', '$3'), [windowStart, attempt.trustedDeviceIdHash, signInLimits.perTrustedDevice - 1],
    );
    if (rows.length === 0) return { retryAfterSeconds: undefined, attempt };
  }
  const untrusted = { ...attempt, trustedDeviceIdHash: undefined };
  // Failures of trusted devices are their own business: they count toward neither limit here.
  const { rows } = await db.query<{ occurred_at: Date }>(
    `${limitReachedAt('email = $2 AND device_id_hash IS NULL', '$4')} UNION ALL ${limitReachedAt('client_address = $3 AND device_id_hash IS NULL', '$5')}`,
    [windowStart, attempt.email, attempt.clientAddress, signInLimits.perAccount - 1, signInLimits.perAddress - 1],
  );
  return { retryAfterSeconds: secondsUntilFree(rows, attempt.now), attempt: untrusted };
}

/** Records a failed sign-in (as the verdict counted it), and deletes failures that have left the window (nothing else reads them). */
export async function recordSignInFailure(db: Queryable, attempt: SignInAttempt): Promise<void> {
  await db.query('DELETE FROM sign_in_failures WHERE occurred_at <= $1', [new Date(attempt.now.getTime() - signInLimits.windowMs)]);
  await db.query(
    'INSERT INTO sign_in_failures (email, client_address, occurred_at, device_id_hash) VALUES ($1, $2, $3, $4)',
    [attempt.email.slice(0, 320), attempt.clientAddress.slice(0, 100), attempt.now, attempt.trustedDeviceIdHash ?? null],
  );
}

/**
 * Forgets failures after a sign-in succeeded. From a trusted device: that device's own only, so
 * the owner signing in does not hand someone guessing at their email a fresh set of tries.
 * From an untrusted client: the email's (the address's other failures stay: they may concern other emails).
 */
export async function clearSignInFailures(db: Queryable, attempt: SignInAttempt): Promise<void> {
  if (attempt.trustedDeviceIdHash !== undefined) await db.query('DELETE FROM sign_in_failures WHERE device_id_hash = $1', [attempt.trustedDeviceIdHash]);
  else await db.query('DELETE FROM sign_in_failures WHERE email = $1', [attempt.email]);
}
