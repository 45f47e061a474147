import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '@gateway/config';
import { issueSecret } from '@gateway/secrets';
import { loadAdminConfig } from './config.ts';
import { supplierStateCode } from './invoicing/domain/gst.ts';
import { invoicingSettingsFrom } from './invoicing/invoicing-settings.ts';

const encryptionKey = randomBytes(32).toString('base64');
/** The service-identity files every valid configuration names (paths only; nothing is read here). */
const tls = { GRPC_TLS_CA_FILE: '/tls/ca.crt', GRPC_TLS_CERT_FILE: '/tls/tls.crt', GRPC_TLS_KEY_FILE: '/tls/tls.key' };

describe('loadAdminConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadAdminConfig({ ADMIN_ENCRYPTION_KEY: encryptionKey, ...tls });
    expect(config).toEqual({
      ...tls, GRPC_INSECURE: false,
      BIND_HOST: '127.0.0.1', LOG_LEVEL: 'info', DATA_DIR: '.data', SHUTDOWN_GRACE_MS: 10_000,
      ADMIN_HTTP_PORT: 8081, ADMIN_GRPC_PORT: 50052, LEDGER_GRPC_URL: '127.0.0.1:50051', ADMIN_METRICS_PORT: 9102, ADMIN_MIGRATIONS: 'apply',
      ADMIN_ENCRYPTION_KEY: encryptionKey, ADMIN_ENCRYPTION_KEYS_PREVIOUS: [], ADMIN_ALLOW_PRIVATE_UPSTREAMS: false,
      ADMIN_RESPONSE_RETENTION_S: 2_592_000, SNAPSHOT_ACK_TIMEOUT_MS: 5_000, ADMIN_HEARTBEAT_INTERVAL_MS: 5_000, LEDGER_CALL_TIMEOUT_MS: 5_000, LEDGER_BUDGET_CALL_TIMEOUT_MS: 30_000,
      ADMIN_SETUP_EMAIL: 'admin@localhost', ADMIN_SESSION_IDLE_MS: 7_200_000, ADMIN_SESSION_ABSOLUTE_MS: 43_200_000,
      ADMIN_LINK_TTL_MS: 259_200_000, ADMIN_TRUST_PROXY: false, ALERT_POLL_MS: 1_000, ALERT_RETRY_BASE_MS: 30_000,
      ALERT_RETRY_WINDOW_MS: 86_400_000, ALERT_WEBHOOK_TIMEOUT_MS: 10_000, LOW_BALANCE_POLL_MS: 5_000, LIVE_POLL_MS: 500,
      RAZORPAY_API_URL: 'https://api.razorpay.com', PAYMENT_RECONCILE_AFTER_MS: 180_000, PAYMENT_RECONCILE_INTERVAL_MS: 60_000,
      PAYMENT_DEVELOPMENT_MODE: false, PAYMENT_SWEEP_INTERVAL_MS: 900_000, PAYMENT_SWEEP_WINDOW_MS: 345_600_000, TOPUP_EXPIRY_MS: 86_400_000, INVOICE_SUPPLIER_NAME: 'Gateway Operator (set INVOICE_SUPPLIER_NAME)',
      INVOICE_SUPPLIER_ADDRESS: 'Set INVOICE_SUPPLIER_ADDRESS', INVOICE_DEVELOPMENT_MODE: false, GST_EXPORT_MODE: 'igst', INVOICE_SAC: '998315',
      GST_RATE_BASIS_POINTS: 1800, GST_DOCUMENT_MODE: 'tax_invoice', INVOICE_SERIAL_PREFIX: 'GW',
    });
  });

  it('needs the Razorpay key and webhook secret with either payment provider, and the local provider\'s address', () => {
    expect(() => loadAdminConfig({ ...tls, ADMIN_ENCRYPTION_KEY: encryptionKey, PAYMENT_PROVIDER: 'local' }))
      .toThrow(/LOCAL_PAYMENTS_URL[\s\S]*|RAZORPAY_KEY_ID/);
    const config = loadAdminConfig({
      ...tls, ADMIN_ENCRYPTION_KEY: encryptionKey, PAYMENT_PROVIDER: 'local', LOCAL_PAYMENTS_URL: 'http://127.0.0.1:8790',
      RAZORPAY_KEY_ID: 'rzp_test_local0001', RAZORPAY_KEY_SECRET: 'local-key-secret', RAZORPAY_WEBHOOK_SECRET: 'local-webhook-secret',
      PAYMENT_DEVELOPMENT_MODE: 'true',
      INVOICE_SUPPLIER_GSTIN: '27AAPFU0939F1ZV',
    });
    expect(config.PAYMENT_PROVIDER).toBe('local');
  });

  it('refuses payments that move no money (the local provider, Razorpay test keys) unless PAYMENT_DEVELOPMENT_MODE=true', () => {
    const base = {
      ...tls, ADMIN_ENCRYPTION_KEY: encryptionKey, RAZORPAY_KEY_SECRET: 'a-key-secret', RAZORPAY_WEBHOOK_SECRET: 'a-webhook-secret',
      INVOICE_SUPPLIER_GSTIN: '27AAPFU0939F1ZV',
    };
    const local = { ...base, PAYMENT_PROVIDER: 'local', LOCAL_PAYMENTS_URL: 'http://127.0.0.1:8790', RAZORPAY_KEY_ID: 'rzp_test_local0001' };
    const testKeys = { ...base, PAYMENT_PROVIDER: 'razorpay', RAZORPAY_KEY_ID: 'rzp_test_Abcdef0001' };
    expect(() => loadAdminConfig(local)).toThrow(/PAYMENT_PROVIDER: .*free credit.*PAYMENT_DEVELOPMENT_MODE=true/);
    expect(() => loadAdminConfig(testKeys)).toThrow(/RAZORPAY_KEY_ID: .*test-mode key.*PAYMENT_DEVELOPMENT_MODE=true/);
    expect(() => loadAdminConfig({ ...testKeys, PAYMENT_DEVELOPMENT_MODE: 'false' })).toThrow(/PAYMENT_DEVELOPMENT_MODE=true/);
    expect(loadAdminConfig({ ...local, PAYMENT_DEVELOPMENT_MODE: 'true' }).PAYMENT_PROVIDER).toBe('local');
    expect(loadAdminConfig({ ...testKeys, PAYMENT_DEVELOPMENT_MODE: 'true' }).RAZORPAY_KEY_ID).toBe('rzp_test_Abcdef0001');
    const live = loadAdminConfig({ ...testKeys, RAZORPAY_KEY_ID: 'rzp_live_Abcdef0001' });
    expect(live.PAYMENT_DEVELOPMENT_MODE).toBe(false);
  });

  it('accepts the previous webhook secret only with the end of its window, at most 7 days ahead', () => {
    const razorpay = {
      ...tls, ADMIN_ENCRYPTION_KEY: encryptionKey, PAYMENT_PROVIDER: 'razorpay', RAZORPAY_KEY_ID: 'rzp_live_Abcdef0001',
      RAZORPAY_KEY_SECRET: 'a-key-secret', RAZORPAY_WEBHOOK_SECRET: 'the-new-webhook-secret', INVOICE_SUPPLIER_GSTIN: '27AAPFU0939F1ZV',
    };
    expect(() => loadAdminConfig({ ...razorpay, RAZORPAY_WEBHOOK_SECRET_PREVIOUS: 'the-old-webhook-secret' }))
      .toThrow(/RAZORPAY_WEBHOOK_SECRET_PREVIOUS_UNTIL: is required with RAZORPAY_WEBHOOK_SECRET_PREVIOUS/);
    const tooLong = new Date(Date.now() + 8 * 24 * 3_600_000).toISOString();
    expect(() => loadAdminConfig({ ...razorpay, RAZORPAY_WEBHOOK_SECRET_PREVIOUS: 'the-old-webhook-secret', RAZORPAY_WEBHOOK_SECRET_PREVIOUS_UNTIL: tooLong }))
      .toThrow(/RAZORPAY_WEBHOOK_SECRET_PREVIOUS_UNTIL: must be at most 7 days ahead/);
    const until = new Date(Date.now() + 25 * 3_600_000).toISOString();
    const config = loadAdminConfig({ ...razorpay, RAZORPAY_WEBHOOK_SECRET_PREVIOUS: 'the-old-webhook-secret', RAZORPAY_WEBHOOK_SECRET_PREVIOUS_UNTIL: until });
    expect(config.RAZORPAY_WEBHOOK_SECRET_PREVIOUS_UNTIL).toEqual(new Date(until));
  });

  it('refuses a public URL, setup email or SMTP URL that is not one', () => {
    expect(() => loadAdminConfig({
      ...tls, ADMIN_ENCRYPTION_KEY: encryptionKey, ADMIN_PUBLIC_URL: 'ftp://x', ADMIN_SETUP_EMAIL: 'nobody', SMTP_URL: 'http://mail',
    })).toThrow(/ADMIN_PUBLIC_URL[\s\S]*ADMIN_SETUP_EMAIL[\s\S]*SMTP_URL|ADMIN_SETUP_EMAIL|SMTP_URL/);
  });

  it('reads every variable', () => {
    const token = issueSecret('adminToken').secret;
    const config = loadAdminConfig({
      ...tls, ADMIN_ENCRYPTION_KEY: encryptionKey, ADMIN_BOOTSTRAP_TOKEN: token, ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'true',
      DEMO_UPSTREAM_URL: 'http://127.0.0.1:8788/v1', DATABASE_URL: 'postgres://u@h:5432/d', ADMIN_HTTP_PORT: '0',
    });
    expect(config.ADMIN_BOOTSTRAP_TOKEN).toBe(token);
    expect(config.ADMIN_ALLOW_PRIVATE_UPSTREAMS).toBe(true);
    expect(config.DEMO_UPSTREAM_URL).toBe('http://127.0.0.1:8788/v1');
    expect(config.ADMIN_HTTP_PORT).toBe(0);
  });

  it('reports every problem at once and never echoes a secret value', () => {
    const badToken = 'gwadm_not-a-real-token-but-secret-looking';
    const badKey = 'c2hvcnQ='; // base64 of 5 bytes
    let error: unknown;
    try {
      loadAdminConfig({
        ADMIN_ENCRYPTION_KEY: badKey, ADMIN_BOOTSTRAP_TOKEN: badToken, ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'perhaps',
        DEMO_UPSTREAM_URL: 'http://user:pw@127.0.0.1/', SNAPSHOT_ACK_TIMEOUT_MS: '-1',
      });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems.join('\n');
    for (const variable of ['ADMIN_ENCRYPTION_KEY', 'ADMIN_BOOTSTRAP_TOKEN', 'ADMIN_ALLOW_PRIVATE_UPSTREAMS', 'DEMO_UPSTREAM_URL', 'SNAPSHOT_ACK_TIMEOUT_MS']) {
      expect(problems).toContain(variable);
    }
    expect((error as Error).message).not.toContain(badToken);
    expect((error as Error).message).not.toContain(badKey);
  });

  it('reads previous encryption keys as a comma-separated list and names a malformed entry by position, never echoing it', () => {
    const previous = [randomBytes(32).toString('base64'), randomBytes(32).toString('base64')];
    expect(loadAdminConfig({ ...tls, ADMIN_ENCRYPTION_KEY: encryptionKey, ADMIN_ENCRYPTION_KEYS_PREVIOUS: ` ${previous[0]} ,,${previous[1]}, ` })
      .ADMIN_ENCRYPTION_KEYS_PREVIOUS).toEqual(previous);
    const short = randomBytes(16).toString('base64');
    let error: unknown;
    try {
      loadAdminConfig({ ...tls, ADMIN_ENCRYPTION_KEY: encryptionKey, ADMIN_ENCRYPTION_KEYS_PREVIOUS: `${previous[0]},${short}` });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/ADMIN_ENCRYPTION_KEYS_PREVIOUS.*entry 2 must decode to exactly 32 bytes/);
    expect((error as Error).message).not.toContain(short);
    expect((error as Error).message).not.toContain(previous[0]);
  });

  it('requires certificates for internal gRPC, or the explicit GRPC_INSECURE=true', () => {
    expect(() => loadAdminConfig({ ADMIN_ENCRYPTION_KEY: encryptionKey })).toThrow(/GRPC_TLS_CA_FILE.*GRPC_INSECURE=true/);
    expect(loadAdminConfig({ ADMIN_ENCRYPTION_KEY: encryptionKey, GRPC_INSECURE: 'true' }).GRPC_INSECURE).toBe(true);
  });

  describe('the supplier on GST documents', () => {
    const base = { ...tls, ADMIN_ENCRYPTION_KEY: encryptionKey };
    const payments = {
      PAYMENT_PROVIDER: 'local', PAYMENT_DEVELOPMENT_MODE: 'true', LOCAL_PAYMENTS_URL: 'http://127.0.0.1:8790', RAZORPAY_KEY_ID: 'rzp_test_local0001',
      RAZORPAY_KEY_SECRET: 'local-key-secret', RAZORPAY_WEBHOOK_SECRET: 'local-webhook-secret',
    };

    it('refuses a supplier GSTIN with a wrong check character at start', () => {
      expect(() => loadAdminConfig({ ...base, INVOICE_SUPPLIER_GSTIN: '27AAPFU0939F1ZW' })).toThrow(/INVOICE_SUPPLIER_GSTIN: has a wrong check character/);
    });

    it('takes the supplier\'s state from its GSTIN, and refuses a state code that contradicts it', () => {
      expect(supplierStateCode(invoicingSettingsFrom(loadAdminConfig({ ...base, INVOICE_SUPPLIER_GSTIN: '27AAPFU0939F1ZV' })))).toBe('27');
      expect(supplierStateCode(invoicingSettingsFrom(loadAdminConfig({ ...base, INVOICE_SUPPLIER_GSTIN: '27AAPFU0939F1ZV', INVOICE_SUPPLIER_STATE_CODE: '27' })))).toBe('27');
      expect(() => loadAdminConfig({ ...base, INVOICE_SUPPLIER_GSTIN: '27AAPFU0939F1ZV', INVOICE_SUPPLIER_STATE_CODE: '29' }))
        .toThrow(/INVOICE_SUPPLIER_STATE_CODE: is 29 but INVOICE_SUPPLIER_GSTIN is registered in state 27/);
      // A supplier is in an Indian state in force: not a retired code, not 96 (abroad) or 99.
      for (const code of ['25', '96', '99', '42']) {
        expect(() => loadAdminConfig({ ...base, INVOICE_SUPPLIER_STATE_CODE: code })).toThrow(/INVOICE_SUPPLIER_STATE_CODE: names state/);
      }
    });

    it('refuses at start to take payments whose documents would carry GST without a supplier GSTIN (development mode and a zero rate aside)', () => {
      expect(() => loadAdminConfig({ ...base, ...payments })).toThrow(/INVOICE_SUPPLIER_GSTIN: is required to issue GST documents/);
      const development = loadAdminConfig({ ...base, ...payments, INVOICE_DEVELOPMENT_MODE: 'true' });
      expect(development.INVOICE_DEVELOPMENT_MODE).toBe(true);
      expect(supplierStateCode(invoicingSettingsFrom(development))).toBe('29');
      expect(loadAdminConfig({ ...base, ...payments, GST_RATE_BASIS_POINTS: '0' }).GST_RATE_BASIS_POINTS).toBe(0);
      expect(loadAdminConfig({ ...base, ...payments, INVOICE_SUPPLIER_GSTIN: '27AAPFU0939F1ZV' }).PAYMENT_PROVIDER).toBe('local');
      // Without a payment provider no top-up is paid, so no document is issued: nothing to refuse.
      expect(loadAdminConfig(base).INVOICE_SUPPLIER_GSTIN).toBeUndefined();
    });
  });

  it('invoices exports with IGST unless told LUT, and LUT needs its reference', () => {
    const base = { ...tls, ADMIN_ENCRYPTION_KEY: encryptionKey };
    expect(() => loadAdminConfig({ ...base, GST_EXPORT_MODE: 'lut' })).toThrow(/INVOICE_LUT_REFERENCE: is required with GST_EXPORT_MODE=lut/);
    expect(loadAdminConfig({ ...base, GST_EXPORT_MODE: 'lut', INVOICE_LUT_REFERENCE: 'ad290326012345x' }).INVOICE_LUT_REFERENCE).toBe('AD290326012345X');
    expect(() => loadAdminConfig({ ...base, GST_EXPORT_MODE: 'zero' })).toThrow(/GST_EXPORT_MODE/);
  });

  it('reads the proxy\'s public /v1 base URL without a trailing slash, and refuses one that is not a /v1 base', () => {
    expect(loadAdminConfig({ ...tls, ADMIN_ENCRYPTION_KEY: encryptionKey, ADMIN_PROXY_PUBLIC_URL: 'https://gateway.example.com/v1/' }).ADMIN_PROXY_PUBLIC_URL)
      .toBe('https://gateway.example.com/v1');
    expect(loadAdminConfig({ ...tls, ADMIN_ENCRYPTION_KEY: encryptionKey }).ADMIN_PROXY_PUBLIC_URL).toBeUndefined();
    for (const wrong of ['https://gateway.example.com', 'https://gateway.example.com/v1?x=1', 'ftp://gateway.example.com/v1', 'https://u:p@gateway.example.com/v1']) {
      expect(() => loadAdminConfig({ ...tls, ADMIN_ENCRYPTION_KEY: encryptionKey, ADMIN_PROXY_PUBLIC_URL: wrong })).toThrow(/ADMIN_PROXY_PUBLIC_URL/);
    }
  });

  it('requires the encryption key', () => {
    expect(() => loadAdminConfig({})).toThrow(/ADMIN_ENCRYPTION_KEY: is required/);
  });
});
