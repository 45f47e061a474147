/** The billing area's settings: top-up lifetime, the dashboard's address and the payment jobs' cadence. */
export interface BillingSettings {
  /** How long a purchased top-up waits for its payment before it expires, ms. */
  topUpExpiryMs: number;
  /** The dashboard's public base URL the local pay page returns to; undefined: the purchase request's origin. */
  dashboardUrl: string | undefined;
  /** Quiet time after which reconciliation asks the provider about a top-up, ms. */
  reconcileAfterMs: number;
  /** How often the payment, refund and reversal jobs run, ms; also the first retry wait of a failed step. */
  reconcileIntervalMs: number;
  /** How often the payments sweep lists the provider's recent payments, ms. */
  sweepIntervalMs: number;
  /** How far back the payments sweep looks, ms. */
  sweepWindowMs: number;
}
