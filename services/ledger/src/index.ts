/** The ledger's public entry: the app that owns every rupee, its configuration, and the balance check. */

/** createLedgerApp(config, deps) starts the ledger; LedgerApp is its handle. */
export { createLedgerApp, type LedgerApp, type LedgerAppDeps } from './app.ts';
/** The ledger's environment schema, its loader, and the parsed configuration type. */
export { ledgerConfigSchema, loadLedgerConfig, type LedgerConfig } from './config.ts';
/** The conservation check: recomputes balances from the rows and lists every disagreement. */
export {
  findBalanceDifferences, recomputeBalances, verifyLedger, type BalanceCheck, type BalanceDifference, type BalanceName,
  type LedgerVerification,
} from './domain/find-balance-differences.ts';
/** Vocabulary of the ledger's balances and reservations. */
export type { Balances, BillingMode, ReservationStatus, UsageSource } from './domain/ledger-types.ts';
/** The values of the ledger's RPC metric labels: `method` (the proto's method names) and `operation` (Operate-stream operations). */
export { ledgerRpcMethods, operateOperations } from './transport/rpc-metrics.ts';
