import type { Queryable } from '@gateway/db';

/**
 * How many failed sign-ins a window allows: per account (email, known or not: the answer must
 * not tell which emails exist) and per client address (one machine trying many emails).
 */
export const signInLimits = { perAccount: 5, perAddress: 30, windowMs: 15 * 60_000 } as const;

/** Who is trying to sign in, at what time. */
export interface SignInAttempt {
  /** Lower-cased and trimmed. */
  email: string;
  clientAddress: string;
  now: Date;
}

/**
 * When sign-in is throttled for this email or address: the seconds until enough failures have
 * left the window to allow one more try (for Retry-After); undefined when it is not throttled.
 */
export async function signInRetryAfterSeconds(db: Queryable, attempt: SignInAttempt): Promise<number | undefined> {
  const windowStart = new Date(attempt.now.getTime() - signInLimits.windowMs);
  // The limit-th most recent failure in the window: while it is inside, the limit is reached.
  const { rows } = await db.query<{ occurred_at: Date }>(
    `(SELECT occurred_at FROM sign_in_failures WHERE email = $1 AND occurred_at > $3 ORDER BY occurred_at DESC OFFSET $4 LIMIT 1)
     UNION ALL
     (SELECT occurred_at FROM sign_in_failures WHERE client_address = $2 AND occurred_at > $3 ORDER BY occurred_at DESC OFFSET $5 LIMIT 1)`,
    [attempt.email, attempt.clientAddress, windowStart, signInLimits.perAccount - 1, signInLimits.perAddress - 1],
  );
  if (rows.length === 0) return undefined;
  const freeAtMs = Math.max(...rows.map((row) => row.occurred_at.getTime() + signInLimits.windowMs));
  return Math.max(1, Math.ceil((freeAtMs - attempt.now.getTime()) / 1000));
}

/** Records a failed sign-in, and deletes failures that have left the window (nothing else reads them). */
export async function recordSignInFailure(db: Queryable, attempt: SignInAttempt): Promise<void> {
  await db.query('DELETE FROM sign_in_failures WHERE occurred_at <= $1', [new Date(attempt.now.getTime() - signInLimits.windowMs)]);
  await db.query(
    'INSERT INTO sign_in_failures (email, client_address, occurred_at) VALUES ($1, $2, $3)',
    [attempt.email.slice(0, 320), attempt.clientAddress.slice(0, 100), attempt.now],
  );
}

/** Forgets an account's failures after it signed in (the address's stay: they may concern other emails). */
export async function clearSignInFailures(db: Queryable, email: string): Promise<void> {
  await db.query('DELETE FROM sign_in_failures WHERE email = $1', [email]);
}
