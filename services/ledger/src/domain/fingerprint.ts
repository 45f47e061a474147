import { createHash } from 'node:crypto';

/** A field of a request payload as it takes part in a fingerprint. */
export type FingerprintValue = string | bigint | number | boolean | null;

/**
 * The idempotency fingerprint of a request payload: a SHA-256 over the operation name and the
 * fields in sorted key order, each with its type. Two payloads get the same fingerprint
 * exactly when every field is equal, whatever order the caller built them in.
 */
export function fingerprintOf(operation: string, fields: Record<string, FingerprintValue>): string {
  // Each value carries its type, so 1n, 1 and '1' (or null and '') never share a fingerprint.
  const canonical = Object.keys(fields).sort().map((key) => {
    const value = fields[key] ?? null;
    return [key, value === null ? 'null' : typeof value, value === null ? '' : String(value)];
  });
  return createHash('sha256').update(JSON.stringify([operation, canonical])).digest('hex');
}
