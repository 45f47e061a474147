/** What the alerts area is configured with (mapped from the environment by alerts/alerts-settings.ts). */
export interface AlertsSettings {
  /** Whether webhook URLs may be http and private addresses (development, demo); checked when stored and before each send. */
  allowPrivateWebhooks: boolean;
  /** The dashboard's public URL, named in alert emails; undefined: not named. */
  dashboardUrl: string | undefined;
  /** How long one webhook attempt may take, ms. */
  webhookTimeoutMs: number;
  /** The first retry's delay after a failed delivery, ms (doubling after each further failure). */
  retryBaseMs: number;
  /** How long after its first attempt a delivery is retried, ms. */
  retryWindowMs: number;
  /** How often the ledger's budget alerts are read and due deliveries claimed, ms. */
  pollMs: number;
  /** How often low balances are checked, ms. */
  lowBalancePollMs: number;
}
