/**
 * A fresh Idempotency-Key for one dialog's money-moving request: 128 random bits in hex.
 * crypto.getRandomValues works on plain-http origins too, unlike crypto.randomUUID (secure contexts only).
 */
export function newIdempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `dashboard-${[...bytes].map((byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}
