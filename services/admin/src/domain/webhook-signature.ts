import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * The signature of an alert webhook: `X-Gateway-Signature: t=<unix seconds>,v1=<hex>` where hex
 * is HMAC-SHA256, keyed with the whole secret string (UTF-8, `whsec_` included), of
 * `"<t>.<raw body>"`. The time is inside the signed text so a captured request cannot be replayed
 * later with a fresh time; receivers refuse a `t` too far from their clock (docs/alerts.md).
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

/**
 * Whether a header signs this body with this secret within `toleranceSeconds` of `nowSeconds`:
 * the receiver's side, as docs/alerts.md describes it (constant-time comparison).
 */
export function signatureMatches(secret: string, body: string, header: string, nowSeconds: number, toleranceSeconds = 300): boolean {
  const parts = new Map(header.split(',').map((part) => {
    const at = part.indexOf('=');
    return [part.slice(0, at).trim(), part.slice(at + 1).trim()] as const;
  }));
  const time = Number(parts.get('t'));
  const given = parts.get('v1') ?? '';
  if (!Number.isInteger(time) || Math.abs(nowSeconds - time) > toleranceSeconds || !/^[0-9a-f]{64}$/.test(given)) return false;
  const expected = createHmac('sha256', secret).update(`${time}.${body}`, 'utf8').digest();
  return timingSafeEqual(expected, Buffer.from(given, 'hex'));
}
