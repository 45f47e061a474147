/** An operation the database rolled back alone; carries its SQLSTATE for the log (never shown to callers). */
export class LedgerOperationError extends Error {
  readonly code: string;
  constructor(sqlState: string, message: string) {
    super(`ledger operation failed (${sqlState}): ${message}`);
    this.name = 'LedgerOperationError';
    this.code = sqlState;
  }
}
