import type { Balance, UsageRecord } from './admin-records.ts';

/**
 * What the admin needs from the ledger. Implementations turn every non-OK result into a
 * GatewayError from the catalogue (e.g. an unknown organisation becomes `not_found`).
 */
export interface LedgerPort {
  /** Opens an organisation's wallet account; idempotent on the id. */
  openAccount(organisationId: string): Promise<void>;
  /** Credits a balance; idempotent on creditId (same payload: same result; else idempotency_conflict). */
  credit(request: { creditId: string; organisationId: string; amountMicros: bigint; reason: string }): Promise<{ availableMicros: bigint }>;
  /** Reads an organisation's balance. */
  getBalance(organisationId: string): Promise<Balance>;
  /** Lists usage records newest first, one page at a time. */
  listUsage(request: {
    organisationId: string;
    projectId?: string | undefined;
    modelSlug?: string | undefined;
    /** 1..500 records. */
    pageSize: number;
    /** Opaque token from the previous page. */
    pageToken?: string | undefined;
  }): Promise<{ records: UsageRecord[]; nextPageToken: string | null }>;
}
