import { commonEnv, loadConfig, z } from '@gateway/config';
import { checkGrpcTlsEnv, grpcTlsEnv } from '@gateway/grpc';
import { isWellFormedSecret } from '@gateway/secrets';
import { encryptionKeyListProblem, encryptionKeyProblem, parseEncryptionKeyList } from './common/domain/credential-cipher.ts';
import { parseTrustProxy } from './common/http/trust-proxy.ts';
import { gstinProblem, gstinStateCode } from './invoicing/domain/gstin.ts';
import { gstinStates, gstStateCodesText } from '../shared/gst-states.ts';

/** A URL the admin may seed the demo model with: http(s), no credentials in it. */
const demoUpstreamUrl = z.string().refine((value) => {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.username === '' && url.password === '';
}, { error: 'must be an http:// or https:// URL without credentials' });

/** The file under DATA_DIR where `pnpm start` keeps the generated ADMIN_ENCRYPTION_KEY when none is set (owner-only). */
export const embeddedEncryptionKeyFile = 'admin-encryption.key';

/** How far ahead the previous webhook secret may stay accepted, ms (Razorpay retries a webhook for 24 hours). */
const maxPreviousSecretWindowMs = 7 * 24 * 60 * 60_000;

/**
 * The admin's environment, keyed by variable name. Every problem is reported at once by
 * `loadConfig`; no value is ever echoed back (several are secrets).
 */
export const adminConfigSchema = z.object({
  BIND_HOST: z.string().min(1).default('127.0.0.1'),
  LOG_LEVEL: commonEnv.logLevel,
  DATABASE_URL: commonEnv.postgresUrl.optional(),
  DATA_DIR: z.string().min(1).default('.data'),
  SHUTDOWN_GRACE_MS: commonEnv.durationMs(10_000),
  /** Port of the admin REST API, /healthz and /readyz. */
  ADMIN_HTTP_PORT: commonEnv.port(8081),
  /** Port of the config stream (gateway.config.v1.ConfigService) that proxies connect to. */
  ADMIN_GRPC_PORT: commonEnv.port(50052),
  /** Internal port of GET /metrics (Prometheus), apart from the API people and scripts use (0: any free port). */
  ADMIN_METRICS_PORT: commonEnv.port(9102),
  /**
   * `apply`: the admin brings its schema up to this build at start (one machine, `pnpm start`).
   * `verify`: it only checks the schema is current and refuses to start otherwise: in Kubernetes
   * the release's migration Job applies it once (docs/deploy.md "Upgrades").
   */
  ADMIN_MIGRATIONS: z.enum(['apply', 'verify']).default('apply'),
  /** host:port (or any grpc-js target) of the ledger's gRPC server. */
  LEDGER_GRPC_URL: z.string().regex(/^\S+$/, 'must be a gRPC target such as 127.0.0.1:50051').default('127.0.0.1:50051'),
  /** Base64 of the 32-byte AES-256-GCM key that seals secrets at rest (upstream credentials, webhook signing secrets). */
  ADMIN_ENCRYPTION_KEY: z.string({ error: 'is required: base64 of 32 random bytes (e.g. `openssl rand -base64 32`)' })
    .superRefine((value, ctx) => {
      const problem = encryptionKeyProblem(value);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    }),
  /**
   * Keys that still open secrets sealed before a rotation, never seal (comma-separated, each like
   * ADMIN_ENCRYPTION_KEY); empty once `cli.ts reencrypt --check` says nothing needs them.
   */
  ADMIN_ENCRYPTION_KEYS_PREVIOUS: z.string().default('')
    .superRefine((value, ctx) => {
      const problem = encryptionKeyListProblem(value);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .transform(parseEncryptionKeyList),
  /** A gwadm_ token to store as the platform-admin token when none exists yet. */
  ADMIN_BOOTSTRAP_TOKEN: z.string()
    .refine((value) => isWellFormedSecret('adminToken', value), { error: 'must be a well-formed gwadm_ token (prefix, length and checksum)' })
    .optional(),
  /** true: upstream base URLs may use http and private/loopback addresses (local development, demo). */
  ADMIN_ALLOW_PRIVATE_UPSTREAMS: z.stringbool({ error: 'must be true or false' }).default(false),
  /** When set, a gateway model `demo` pointing at this URL is created once. */
  DEMO_UPSTREAM_URL: demoUpstreamUrl.optional(),
  /**
   * How long the proxies keep a stored Response, seconds (the platform's retention; an
   * organisation may shorten it, or turn storing off). Default 30 days, as OpenAI's; at least a minute, at most a year.
   */
  ADMIN_RESPONSE_RETENTION_S: z.coerce.number().int().min(60).max(31_536_000).default(2_592_000),
  /** How long a config-changing call waits for connected proxies to acknowledge, ms. */
  SNAPSHOT_ACK_TIMEOUT_MS: commonEnv.durationMs(5_000),
  /** Interval of heartbeats on the config stream, ms. */
  ADMIN_HEARTBEAT_INTERVAL_MS: commonEnv.durationMs(5_000),
  /** Deadline of each call to the ledger, ms. */
  LEDGER_CALL_TIMEOUT_MS: commonEnv.durationMs(5_000),
  /**
   * Deadline of a project budget change at the ledger, ms: it answers once the project's credit
   * grants are recalled (at most the ledger's LEDGER_BUDGET_RECALL_WAIT_MS), so keep this above that.
   */
  LEDGER_BUDGET_CALL_TIMEOUT_MS: commonEnv.durationMs(30_000),
  /** The dashboard's address as people reach it (links in invitations and the setup link); default http://BIND_HOST:ADMIN_HTTP_PORT. */
  ADMIN_PUBLIC_URL: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
  /**
   * The proxy's public base URL as customers call it, ending in /v1 (e.g. https://gateway.example.com/v1):
   * the dashboard's Quickstart and Models pages show it and fill it into code samples; unset: they say to ask the operator.
   */
  ADMIN_PROXY_PUBLIC_URL: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })
    .transform((value) => value.replace(/\/+$/, ''))
    .refine((value) => {
      const url = new URL(value);
      return url.pathname.endsWith('/v1') && url.search === '' && url.hash === '' && url.username === '' && url.password === '';
    }, { error: 'must be the proxy\'s /v1 base URL without query or credentials, e.g. https://gateway.example.com/v1' })
    .optional(),
  /** Email of the first platform-admin person, created with a one-time setup link when nobody exists yet. */
  ADMIN_SETUP_EMAIL: z.email({ error: 'must be an email address' }).default('admin@localhost'),
  /** A session ends after this long without a request, ms. */
  ADMIN_SESSION_IDLE_MS: commonEnv.durationMs(2 * 60 * 60_000),
  /** A session ends this long after sign-in whatever its use, ms. */
  ADMIN_SESSION_ABSOLUTE_MS: commonEnv.durationMs(12 * 60 * 60_000),
  /** How long an invitation, password-reset or setup link stays valid, ms. */
  ADMIN_LINK_TTL_MS: commonEnv.durationMs(72 * 60 * 60_000),
  /**
   * Which proxy in front is believed for X-Forwarded-For (the client address sign-in throttling
   * counts) and X-Forwarded-Proto: false; true (one hop); a hop count; or proxy addresses/CIDRs,
   * comma-separated (common/http/trust-proxy.ts, docs/deploy.md "The admin behind an ingress").
   */
  ADMIN_TRUST_PROXY: z.string().default('false').transform((value, ctx) => {
    const setting = parseTrustProxy(value);
    if (setting === undefined) {
      ctx.addIssue({ code: 'custom', message: 'must be true, false, a hop count (1..10) or a comma-separated list of proxy addresses and CIDRs' });
      return z.NEVER;
    }
    return setting;
  }),
  /** How often the admin reads new budget alerts from the ledger and due webhook deliveries, ms. */
  ALERT_POLL_MS: commonEnv.durationMs(1_000),
  /** First retry delay of a failed alert delivery, ms; it doubles with every attempt (capped at one hour). */
  ALERT_RETRY_BASE_MS: commonEnv.durationMs(30_000),
  /** How long a failed alert delivery keeps being retried, ms. */
  ALERT_RETRY_WINDOW_MS: commonEnv.durationMs(24 * 60 * 60_000),
  /** Deadline of one webhook delivery attempt, ms. */
  ALERT_WEBHOOK_TIMEOUT_MS: commonEnv.durationMs(10_000),
  /** How often balances with a low-balance threshold are checked, ms. */
  LOW_BALANCE_POLL_MS: commonEnv.durationMs(5_000),
  /** How often the live dashboard's balance and recent requests are re-read while someone watches, ms. */
  LIVE_POLL_MS: commonEnv.durationMs(500),
  /** smtp:// or smtps:// URL of a mail server; when set (with SMTP_FROM), alerts and invitation links are also sent by email. */
  SMTP_URL: z.url({ protocol: /^smtps?$/, error: 'must be an smtp:// or smtps:// URL' }).optional(),
  /** The From address of those emails. */
  SMTP_FROM: z.email({ error: 'must be an email address' }).optional(),
  /** Which payment provider top-ups go through: 'razorpay', or 'local' (the built-in stand-in at LOCAL_PAYMENTS_URL, same API); both need RAZORPAY_*; unset: no top-ups. */
  PAYMENT_PROVIDER: z.enum(['razorpay', 'local'], { error: 'must be "razorpay" or "local"' }).optional(),
  /** Razorpay key id (rzp_live_… / rzp_test_…), also given to Checkout in the browser. */
  RAZORPAY_KEY_ID: z.string().regex(/^rzp_(live|test)_[A-Za-z0-9]{6,40}$/, 'must look like rzp_live_… or rzp_test_…').optional(),
  /** Razorpay key secret: signs API calls (basic auth) and Checkout callbacks. */
  RAZORPAY_KEY_SECRET: z.string().min(8, { error: 'must be the key secret from the Razorpay dashboard' }).optional(),
  /** Razorpay webhook secret: verifies X-Razorpay-Signature. */
  RAZORPAY_WEBHOOK_SECRET: z.string().min(8, { error: 'must be the webhook secret set in the Razorpay dashboard' }).optional(),
  /** The webhook secret before the last rotation: still verifies webhooks until RAZORPAY_WEBHOOK_SECRET_PREVIOUS_UNTIL (Razorpay retries older events signed with it). */
  RAZORPAY_WEBHOOK_SECRET_PREVIOUS: z.string().min(8, { error: 'must be the webhook secret used before the rotation' }).optional(),
  /** When the previous webhook secret stops being accepted: an ISO 8601 time, at most 7 days ahead (rotation time + 24 h covers Razorpay's retries). */
  RAZORPAY_WEBHOOK_SECRET_PREVIOUS_UNTIL: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 time such as 2026-01-31T12:00:00Z' })
    .transform((value) => new Date(value)).optional(),
  /**
   * true: an explicit development setting, where payments that move no money are allowed — the local
   * provider and Razorpay test-mode keys (rzp_test_), whose every top-up is free credit. `pnpm start` sets it with its local provider.
   */
  PAYMENT_DEVELOPMENT_MODE: z.stringbool({ error: 'must be true or false' }).default(false),
  /** Base URL of Razorpay's REST API. */
  RAZORPAY_API_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).default('https://api.razorpay.com'),
  /** The local payment provider's base URL (PAYMENT_PROVIDER=local): its API and pay page. */
  LOCAL_PAYMENTS_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  /** A top-up still awaiting payment after this long is fetched from the provider and settled from its answer, ms. */
  PAYMENT_RECONCILE_AFTER_MS: commonEnv.durationMs(3 * 60_000),
  /** How often the reconciliation looks for such top-ups, ms. */
  PAYMENT_RECONCILE_INTERVAL_MS: commonEnv.durationMs(60_000),
  /**
   * How often the payments sweep lists the provider's payments of the last PAYMENT_SWEEP_WINDOW_MS
   * (captures no order or webhook reported; authorised payments to capture), ms; also how often an
   * expired or failed top-up's order is asked about again.
   */
  PAYMENT_SWEEP_INTERVAL_MS: commonEnv.durationMs(15 * 60_000),
  /**
   * How far back the sweep lists payments, and how long after its expiry a top-up's order is still
   * asked about, ms (default 4 days: Razorpay authorises late for up to 3 days and refunds an
   * authorisation not captured within 3 days).
   */
  PAYMENT_SWEEP_WINDOW_MS: commonEnv.durationMs(4 * 24 * 60 * 60_000),
  /** An order not paid within this long expires, ms. */
  TOPUP_EXPIRY_MS: commonEnv.durationMs(24 * 60 * 60_000),
  /** The supplier on invoices: legal name. */
  INVOICE_SUPPLIER_NAME: z.string().min(1).max(200).default('Gateway Operator (set INVOICE_SUPPLIER_NAME)'),
  /** The supplier's address, one line per `\n`. */
  INVOICE_SUPPLIER_ADDRESS: z.string().min(1).max(1000).default('Set INVOICE_SUPPLIER_ADDRESS'),
  /**
   * The supplier's GSTIN (15 characters, layout and check character validated at start); its first
   * two digits are the supplier's state. Required to take payments at a non-zero GST rate, outside
   * INVOICE_DEVELOPMENT_MODE.
   */
  INVOICE_SUPPLIER_GSTIN: z.string().trim().toUpperCase().superRefine((value, ctx) => {
    const problem = gstinProblem(value);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  }).optional(),
  /**
   * The supplier's state as a two-digit GST state code; decides CGST + SGST vs IGST. Optional: the
   * GSTIN's state is used, and a different value here is refused. Without a GSTIN (development): 29.
   */
  INVOICE_SUPPLIER_STATE_CODE: z.string().regex(/^[0-9]{2}$/, 'must be a two-digit GST state code such as 29').optional(),
  /**
   * true: a development machine (`pnpm start` sets it when INVOICE_SUPPLIER_GSTIN is unset): GST
   * documents may be issued without a supplier GSTIN, each printed as a development document that
   * is not valid for GST.
   */
  INVOICE_DEVELOPMENT_MODE: z.stringbool({ error: 'must be true or false' }).default(false),
  /** Services Accounting Code on invoices (confirm with your tax adviser). */
  INVOICE_SAC: z.string().regex(/^[0-9]{6}$/, 'must be a six-digit SAC').default('998315'),
  /** GST rate, in basis points (1800 = 18%). */
  GST_RATE_BASIS_POINTS: z.coerce.number().int().min(0).max(10_000).default(1800),
  /** What is issued at top-up: 'tax_invoice' (default), or 'receipt_voucher' plus a monthly tax invoice for the usage (Rule 50). */
  GST_DOCUMENT_MODE: z.enum(['tax_invoice', 'receipt_voucher'], { error: 'must be "tax_invoice" or "receipt_voucher"' }).default('tax_invoice'),
  /**
   * How a recipient outside India (billing state code 96) is invoiced, as an export of services:
   * 'igst' (default), with payment of IGST at GST_RATE_BASIS_POINTS (refundable to the exporter);
   * 'lut', zero-rated under a Letter of Undertaking, no tax (needs INVOICE_LUT_REFERENCE).
   */
  GST_EXPORT_MODE: z.enum(['igst', 'lut'], { error: 'must be "igst" or "lut"' }).default('igst'),
  /** The Letter of Undertaking's reference (its ARN), printed on export invoices under LUT; required with GST_EXPORT_MODE=lut. */
  INVOICE_LUT_REFERENCE: z.string().trim().toUpperCase().regex(/^[A-Z0-9][A-Z0-9/-]{0,39}$/, 'must be the LUT\'s reference (ARN): letters, digits, / and -, at most 40').optional(),
  /** Invoice serial prefix (with the financial year and number it stays within 16 characters). */
  INVOICE_SERIAL_PREFIX: z.string().regex(/^[A-Z]{1,4}$/, 'must be 1..4 capital letters').default('GW'),
  ...grpcTlsEnv,
}).superRefine(checkGrpcTlsEnv).superRefine((config, ctx) => {
  // Both providers speak Razorpay's API and signatures (the local one is a stand-in for it), so
  // both need the key and the webhook secret; the local provider also needs its address.
  if (config.PAYMENT_PROVIDER !== undefined) {
    for (const name of ['RAZORPAY_KEY_ID', 'RAZORPAY_KEY_SECRET', 'RAZORPAY_WEBHOOK_SECRET'] as const) {
      if (config[name] === undefined) ctx.addIssue({ code: 'custom', path: [name], message: `is required with PAYMENT_PROVIDER=${config.PAYMENT_PROVIDER}` });
    }
  }
  if (config.PAYMENT_PROVIDER === 'local' && config.LOCAL_PAYMENTS_URL === undefined) {
    ctx.addIssue({ code: 'custom', path: ['LOCAL_PAYMENTS_URL'], message: 'is required with PAYMENT_PROVIDER=local' });
  }
  // A payment that moves no money credits real balance for free: only where someone said so.
  if (!config.PAYMENT_DEVELOPMENT_MODE) {
    if (config.PAYMENT_PROVIDER === 'local') {
      ctx.addIssue({ code: 'custom', path: ['PAYMENT_PROVIDER'], message: 'local moves no money, so every top-up would be free credit: allowed only with PAYMENT_DEVELOPMENT_MODE=true' });
    } else if (config.PAYMENT_PROVIDER === 'razorpay' && config.RAZORPAY_KEY_ID?.startsWith('rzp_test_')) {
      ctx.addIssue({ code: 'custom', path: ['RAZORPAY_KEY_ID'], message: 'is a test-mode key (rzp_test_): its payments move no money, so every top-up would be free credit; use a live key, or set PAYMENT_DEVELOPMENT_MODE=true' });
    }
  }
  if (config.RAZORPAY_WEBHOOK_SECRET_PREVIOUS !== undefined && config.RAZORPAY_WEBHOOK_SECRET_PREVIOUS_UNTIL === undefined) {
    ctx.addIssue({ code: 'custom', path: ['RAZORPAY_WEBHOOK_SECRET_PREVIOUS_UNTIL'], message: 'is required with RAZORPAY_WEBHOOK_SECRET_PREVIOUS (when the old secret stops being accepted)' });
  }
  if (config.RAZORPAY_WEBHOOK_SECRET_PREVIOUS_UNTIL !== undefined && config.RAZORPAY_WEBHOOK_SECRET_PREVIOUS_UNTIL.getTime() > Date.now() + maxPreviousSecretWindowMs) {
    ctx.addIssue({ code: 'custom', path: ['RAZORPAY_WEBHOOK_SECRET_PREVIOUS_UNTIL'], message: 'must be at most 7 days ahead: an old secret accepted for longer defeats the rotation' });
  }
}).superRefine((config, ctx) => {
  // The supplier's state decides CGST + SGST or IGST on every document, and a GSTIN says where
  // its holder is registered: a state code that differs would put every invoice's tax under
  // the wrong head.
  const gstinState = config.INVOICE_SUPPLIER_GSTIN === undefined ? undefined : gstinStateCode(config.INVOICE_SUPPLIER_GSTIN);
  if (gstinState !== undefined && config.INVOICE_SUPPLIER_STATE_CODE !== undefined && config.INVOICE_SUPPLIER_STATE_CODE !== gstinState) {
    ctx.addIssue({
      code: 'custom', path: ['INVOICE_SUPPLIER_STATE_CODE'],
      message: `is ${config.INVOICE_SUPPLIER_STATE_CODE} but INVOICE_SUPPLIER_GSTIN is registered in state ${gstinState}: leave it unset (the GSTIN's state is used) or correct it`,
    });
  }
  const supplierState = gstinState ?? config.INVOICE_SUPPLIER_STATE_CODE;
  if (supplierState !== undefined && !gstinStates.some((state) => state.code === supplierState)) {
    ctx.addIssue({
      code: 'custom', path: [config.INVOICE_SUPPLIER_GSTIN === undefined ? 'INVOICE_SUPPLIER_STATE_CODE' : 'INVOICE_SUPPLIER_GSTIN'],
      message: `names state ${supplierState}, which is not an Indian state or union territory code in force (${gstStateCodesText(gstinStates)})`,
    });
  }
  if (config.GST_EXPORT_MODE === 'lut' && config.INVOICE_LUT_REFERENCE === undefined) {
    ctx.addIssue({ code: 'custom', path: ['INVOICE_LUT_REFERENCE'], message: 'is required with GST_EXPORT_MODE=lut: export invoices under a Letter of Undertaking carry its reference' });
  }
  // Paid top-ups get GST documents. Refused here, at start, rather than by the issuing code, so
  // an operator finds out before the first sale instead of from a failing invoice.
  if (config.PAYMENT_PROVIDER !== undefined && config.GST_RATE_BASIS_POINTS > 0 && config.INVOICE_SUPPLIER_GSTIN === undefined && !config.INVOICE_DEVELOPMENT_MODE) {
    ctx.addIssue({
      code: 'custom', path: ['INVOICE_SUPPLIER_GSTIN'],
      message: `is required to issue GST documents for top-ups (PAYMENT_PROVIDER=${config.PAYMENT_PROVIDER}, GST_RATE_BASIS_POINTS=${config.GST_RATE_BASIS_POINTS}): `
        + 'set the supplier\'s GSTIN, or INVOICE_DEVELOPMENT_MODE=true on a development machine (documents then say they are not valid for GST)',
    });
  }
});

/** The admin's validated configuration (keys are the environment variable names). */
export type AdminConfig = z.infer<typeof adminConfigSchema>;

/** Reads and validates the admin's configuration; throws ConfigError listing every problem. */
export function loadAdminConfig(env: Record<string, string | undefined> = process.env): AdminConfig {
  return loadConfig('admin', adminConfigSchema, env);
}
