/**
 * The advisory lock key (text, hashed with hashtext) the periodic verify holds for its whole run
 * in a schema: verify-monitor.ts takes it so replicas never verify at once, and usage maintenance
 * tries it so it never drops or attaches a partition under a verify's snapshot.
 */
export function periodicVerifyLockKey(schema: string): string {
  return `gateway-ledger:${schema}:periodic-verify`;
}
