import { createHmac, randomBytes } from 'node:crypto';

/**
 * The signature of an alert webhook: `X-Gateway-Signature: t=<unix seconds>,v1=<hex>` where hex
 * is HMAC-SHA256, keyed with the whole secret string (UTF-8, `whsec_` included), of
 * `"<t>.<raw body>"`. The time is inside the signed text so a captured request cannot be replayed
 * later with a fresh time; receivers refuse a `t` too far from their clock (docs/alerts.md; the tests' receiver checks it so,
 * test-support/alert-receiver.ts).
 */

/** Prefix of an organisation's webhook signing secret. */
const signingSecretPrefix = 'whsec_';

/** A fresh signing secret: `whsec_` and 32 random bytes as base64url (43 characters). */
export function newSigningSecret(): string {
  return signingSecretPrefix + randomBytes(32).toString('base64url');
}

/** What the dashboard may show of a secret: its prefix and last four characters, e.g. `whsec_…x7Qa`. */
export function signingSecretHint(secret: string): string {
  return `${signingSecretPrefix}…${secret.slice(-4)}`;
}

/** The X-Gateway-Signature header value for a body sent at `unixSeconds`. */
export function signatureHeader(secret: string, body: string, unixSeconds: number): string {
  const digest = createHmac('sha256', secret).update(`${unixSeconds}.${body}`, 'utf8').digest('hex');
  return `t=${unixSeconds},v1=${digest}`;
}
