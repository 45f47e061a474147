/**
 * `pnpm start`: the whole gateway on one machine, in one process. Ledger, admin and proxy run
 * as in production (each its own servers, talking over gRPC on loopback), over embedded PGlite
 * under DATA_DIR unless DATABASE_URL is set, with an in-process rate limiter unless REDIS_URL is
 * set, plus the built-in demo upstream so a first completion needs no provider account, and the
 * local payment provider (a stand-in for Razorpay) so a first top-up needs no payment account.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { ensureLocalPki, type ServiceRole } from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import { startFakeUpstream } from '@gateway/fake-upstream';
import { startLocalPayments, type LocalPayments } from '@gateway/local-payments';
import { createLedgerApp, loadLedgerConfig } from '@gateway/ledger';
import { createAdminApp, embeddedEncryptionKeyFile, loadAdminConfig } from '@gateway/admin';
import { createProxyApp, loadProxyConfig } from '@gateway/proxy';
import { ConfigError } from '@gateway/config';

type Env = Record<string, string | undefined>;

const env: Env = { ...process.env };
const dataDir = resolve(env.DATA_DIR || '.data');
const bindHost = env.BIND_HOST || '127.0.0.1';
const demoUpstreamPort = Number(env.DEMO_UPSTREAM_PORT || 8788);
const localPaymentsPort = Number(env.LOCAL_PAYMENTS_PORT || 8790);
/** The host in the addresses the banner prints: BIND_HOST, or loopback when it is a wildcard (0.0.0.0, ::). */
const shownHost = bindHost === '0.0.0.0' || bindHost === '::' ? '127.0.0.1' : bindHost.includes(':') ? `[${bindHost}]` : bindHost;

/**
 * Supplier details printed on the GST documents of a start without INVOICE_SUPPLIER_* (an
 * operator's own values win): plainly a demonstration, so a PDF made on a trial machine shows
 * neither a real business nor "set INVOICE_SUPPLIER_NAME" placeholders.
 */
const demoSupplier = {
  INVOICE_SUPPLIER_NAME: 'Demo Gateway Operator (example only, not a real business)',
  INVOICE_SUPPLIER_ADDRESS: '1 Example Road, Bengaluru 560001, Karnataka (demo address: set INVOICE_SUPPLIER_* for real documents)',
} as const;

/** Whether nothing listens on the bind host's `port` right now. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolveFree) => {
    const server = createServer();
    server.once('error', () => resolveFree(false));
    server.listen(port, bindHost, () => server.close(() => resolveFree(true)));
  });
}

/**
 * A free TCP port for a service whose port must be known before it starts (PROXY_HTTP_PORT=0):
 * drawn below Linux's ephemeral range (32768-60999), so no outgoing connection made meanwhile
 * (the admin's start takes seconds) can take it before the proxy listens.
 */
async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const port = 20_000 + randomInt(12_768);
    if (await canListen(port)) return port;
  }
  throw new Error('no free port in 20000-32767 after 200 tries: set PROXY_HTTP_PORT');
}

/**
 * A log destination that drops the admin's per-request access lines (level info, msg "request"),
 * so the banner's once-only token and link stay in view while the dashboard is clicked through;
 * failed requests (level error), warnings and every other line still print. Used only when the
 * operator left LOG_LEVEL unset (set it, e.g. LOG_LEVEL=info, to see every request).
 */
const withoutAccessLines = {
  write(line: string): void {
    if (line.includes('"msg":"request"')) {
      try {
        const entry = JSON.parse(line) as { level?: number; msg?: string };
        if (entry.level === 30 && entry.msg === 'request') return;
      } catch {
        // Not one JSON line: printed as it is.
      }
    }
    process.stdout.write(line);
  },
};

/**
 * The admin's encryption key for upstream credentials. In production it comes from a secret
 * store; for the single-machine default it is generated once and kept beside the data it
 * protects, readable by its owner only.
 */
function developmentEncryptionKey(): string {
  if (env.ADMIN_ENCRYPTION_KEY) return env.ADMIN_ENCRYPTION_KEY;
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, embeddedEncryptionKeyFile);
  if (!existsSync(path)) writeFileSync(path, randomBytes(32).toString('base64'), { mode: 0o600 });
  return readFileSync(path, 'utf8').trim();
}

/** The local payment provider's key id, key secret and webhook secret. */
interface LocalPaymentKeys {
  keyId: string;
  keySecret: string;
  webhookSecret: string;
}

/**
 * The local payment provider's keys, generated once and kept under DATA_DIR (owner-only) like the
 * encryption key, so top-ups made before a restart still verify after it.
 */
function localPaymentKeys(): LocalPaymentKeys {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, 'local-payments-keys.json');
  if (!existsSync(path)) {
    const alphanumeric = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
    const keys: LocalPaymentKeys = {
      keyId: `rzp_test_${Array.from({ length: 14 }, () => alphanumeric[randomInt(alphanumeric.length)]).join('')}`,
      keySecret: randomBytes(24).toString('base64url'),
      webhookSecret: randomBytes(24).toString('base64url'),
    };
    writeFileSync(path, `${JSON.stringify(keys, null, 2)}\n`, { mode: 0o600 });
  }
  return JSON.parse(readFileSync(path, 'utf8')) as LocalPaymentKeys;
}

/**
 * The GRPC_TLS_* variables of each service. An operator who sets GRPC_INSECURE or their own
 * certificate files keeps them; otherwise a local CA and one certificate per service are
 * created once under DATA_DIR/pki (keys 0600), reused on later starts and renewed within 30 days
 * of expiry, so the three services talk mTLS on one machine as in production.
 */
async function serviceTlsEnv(): Promise<(role: ServiceRole) => Env> {
  const chosen = env.GRPC_INSECURE === 'true' || env.GRPC_TLS_CA_FILE || env.GRPC_TLS_CERT_FILE || env.GRPC_TLS_KEY_FILE;
  if (chosen) return () => ({});
  const pki = await ensureLocalPki(join(dataDir, 'pki'), { dnsNames: ['localhost'], ipAddresses: ['127.0.0.1', '::1'] });
  return (role) => ({
    GRPC_TLS_CA_FILE: pki.files[role].caFile, GRPC_TLS_CERT_FILE: pki.files[role].certFile, GRPC_TLS_KEY_FILE: pki.files[role].keyFile,
  });
}

/** An env var's value if the operator set it, else the value this launcher picks. */
function orDefault(name: string, fallback: string): string {
  return env[name] || fallback;
}

/** Prints the banner: a blank line, a rule, the lines, a rule. */
function printBanner(lines: string[]): void {
  const rule = '─'.repeat(78);
  process.stdout.write(`\n${rule}\n${lines.join('\n')}\n${rule}\n\n`);
}

/** What has started so far, stopped in reverse order (proxy first) on a signal or a failed start. */
const running: Array<{ name: string; close(): Promise<void> }> = [];
/** The stop in progress: every later call waits for it instead of exiting before the parts are closed. */
let stopped: Promise<never> | undefined;
/** When the first stop signal arrived, ms since the epoch (0: none yet). */
let firstSignalAtMs = 0;
/**
 * Signals within this long of the first are the same Ctrl-C (a terminal sends SIGINT to the whole
 * process group, and pnpm forwards it again); a later one means "stop now", ms.
 */
const repeatedSignalWindowMs = 2_000;

function stopAll(exitCode: number): Promise<never> {
  stopped ??= (async () => {
    // Proxy first so every reservation is settled or released while the ledger still runs.
    for (const part of [...running].reverse()) {
      await part.close().catch((error: unknown) => process.stderr.write(`${part.name} did not stop cleanly: ${String(error)}\n`));
    }
    process.exit(exitCode);
  })();
  return stopped;
}

// Installed before anything starts, so a signal during start-up also stops what has started.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (firstSignalAtMs !== 0) {
      if (Date.now() - firstSignalAtMs < repeatedSignalWindowMs) return;
      process.stderr.write(`\n${signal} again: exiting now, without waiting for the services to stop.\n`);
      process.exit(1);
    }
    firstSignalAtMs = Date.now();
    process.stdout.write(`\n${signal}: stopping (in-flight requests finish first; ${signal} again after 2 s exits at once)...\n`);
    // Nothing to lose: stopAll catches each part's close failure and ends the process itself.
    void stopAll(0);
  });
}

async function main(): Promise<void> {
  const logLevel = orDefault('LOG_LEVEL', 'info');
  const shared: Env = { ...env, DATA_DIR: dataDir, BIND_HOST: bindHost, LOG_LEVEL: logLevel };
  const tlsOf = await serviceTlsEnv();
  // Each service reaches the others on loopback by the name its local certificate carries
  // ("localhost"): a TLS client naming an IP address sets it as the SNI server name, which Node
  // refuses (DEP0123). Under GRPC_INSECURE or the operator's own certificates, 127.0.0.1 as before.
  const localPki = env.GRPC_INSECURE !== 'true' && !env.GRPC_TLS_CA_FILE && !env.GRPC_TLS_CERT_FILE && !env.GRPC_TLS_KEY_FILE;
  const internalHost = localPki ? 'localhost' : '127.0.0.1';
  // The proxy's port is chosen before the admin starts: the admin shows the proxy's address on the dashboard's Quickstart.
  const proxyPort = orDefault('PROXY_HTTP_PORT', '8080') === '0' ? String(await freePort()) : orDefault('PROXY_HTTP_PORT', '8080');
  const proxyUrl = `http://${shownHost}:${proxyPort}/v1`;

  // It runs as long as the gateway does: it keeps no record of the requests it answers.
  const demoUpstream = await startFakeUpstream({ host: '127.0.0.1', port: demoUpstreamPort, name: 'demo', recordRequests: false });
  running.push({ name: 'demo upstream', close: () => demoUpstream.close() });

  // The local payment provider, unless the operator chose a provider (PAYMENT_PROVIDER=razorpay
  // with their own keys). It starts before the admin, which needs its address; its webhooks are
  // held until the admin is listening and then go to the admin's /webhooks/razorpay.
  let localPayments: LocalPayments | undefined;
  let paymentEnv: Env = {};
  if (!env.PAYMENT_PROVIDER) {
    const keys = localPaymentKeys();
    localPayments = await startLocalPayments({
      host: bindHost, port: localPaymentsPort, ...keys, logger: createLogger('local-payments', logLevel as 'info'),
    });
    const started = localPayments;
    running.push({ name: 'local payment provider', close: () => started.close() });
    paymentEnv = {
      PAYMENT_PROVIDER: 'local',
      // The local provider moves no money: every top-up is free credit, allowed only in development.
      PAYMENT_DEVELOPMENT_MODE: 'true',
      LOCAL_PAYMENTS_URL: localPayments.url,
      RAZORPAY_KEY_ID: keys.keyId,
      RAZORPAY_KEY_SECRET: keys.keySecret,
      RAZORPAY_WEBHOOK_SECRET: keys.webhookSecret,
    };
  }

  const ledger = await createLedgerApp(
    loadLedgerConfig({ ...shared, ...tlsOf('ledger'), LEDGER_GRPC_PORT: orDefault('LEDGER_GRPC_PORT', '0'), LEDGER_HTTP_PORT: orDefault('LEDGER_HTTP_PORT', '0'),
      LEDGER_METRICS_PORT: orDefault('LEDGER_METRICS_PORT', '0'),
    }),
    { logger: createLogger('ledger', logLevel as 'info') },
  );
  running.push({ name: 'ledger', close: () => ledger.close() });
  const ledgerUrl = `${internalHost}:${ledger.ports.grpc}`;

  let bootstrapToken: string | undefined;
  let setupLink: string | undefined;
  const admin = await createAdminApp(
    loadAdminConfig({
      ...shared,
      ...tlsOf('admin'),
      ...paymentEnv,
      ADMIN_GRPC_PORT: orDefault('ADMIN_GRPC_PORT', '0'),
      ADMIN_METRICS_PORT: orDefault('ADMIN_METRICS_PORT', '0'),
      LEDGER_GRPC_URL: ledgerUrl,
      ADMIN_ENCRYPTION_KEY: developmentEncryptionKey(),
      DEMO_UPSTREAM_URL: demoUpstream.baseUrl,
      // The demo upstream lives on loopback; a production admin keeps this false (SSRF guard).
      ADMIN_ALLOW_PRIVATE_UPSTREAMS: orDefault('ADMIN_ALLOW_PRIVATE_UPSTREAMS', 'true'),
      ADMIN_PROXY_PUBLIC_URL: orDefault('ADMIN_PROXY_PUBLIC_URL', proxyUrl),
      INVOICE_SUPPLIER_NAME: orDefault('INVOICE_SUPPLIER_NAME', demoSupplier.INVOICE_SUPPLIER_NAME),
      INVOICE_SUPPLIER_ADDRESS: orDefault('INVOICE_SUPPLIER_ADDRESS', demoSupplier.INVOICE_SUPPLIER_ADDRESS),
      // Top-ups work out of the box: without the operator's GSTIN their documents are development
      // documents (printed as not valid for GST); setting INVOICE_SUPPLIER_GSTIN makes them real.
      INVOICE_DEVELOPMENT_MODE: orDefault('INVOICE_DEVELOPMENT_MODE', env.INVOICE_SUPPLIER_GSTIN ? 'false' : 'true'),
    }),
    {
      logger: env.LOG_LEVEL ? createLogger('admin', logLevel as 'info') : createLogger('admin', logLevel as 'info', withoutAccessLines),
      onBootstrapToken: (secret) => { bootstrapToken = secret; },
      onSetupLink: (url) => { setupLink = url; },
    },
  );

  running.push({ name: 'admin', close: () => admin.close() });
  localPayments?.setWebhookUrl(`http://${shownHost}:${admin.ports.http}/webhooks/razorpay`);

  const proxy = await createProxyApp(
    loadProxyConfig({ ...shared, ...tlsOf('proxy'), ADMIN_GRPC_URL: `${internalHost}:${admin.ports.grpc}`, LEDGER_GRPC_URL: ledgerUrl,
      PROXY_HTTP_PORT: proxyPort, PROXY_METRICS_PORT: orDefault('PROXY_METRICS_PORT', '0'),
    }),
    { logger: createLogger('proxy', logLevel as 'info') },
  );
  running.push({ name: 'proxy', close: () => proxy.close() });

  // The proxy serves nothing until its first snapshot; wait for it so "ready" means ready.
  const readyBy = Date.now() + 15_000;
  while (!proxy.isReady()) {
    if (Date.now() > readyBy) throw new Error('the proxy did not receive its configuration from the admin within 15 s');
    await new Promise((r) => setTimeout(r, 50));
  }

  const adminUrl = `http://${shownHost}:${admin.ports.http}/admin/v1`;
  const dashboardUrl = `http://${shownHost}:${admin.ports.http}/`;
  const lines = [
    'The gateway is running.',
    `  OpenAI-compatible API:  ${proxyUrl}`,
    `  Dashboard:              ${dashboardUrl}`,
    `  Admin API:              ${adminUrl}   (OpenAPI: ${adminUrl}/openapi.json)`,
    `  Demo upstream:          ${demoUpstream.baseUrl}   (built-in demo; gateway models "demo" and "demo-embedding")`,
    `  Payments:               ${localPayments ? `local provider at ${localPayments.url}   (a stand-in for Razorpay; no money moves)` : `${env.PAYMENT_PROVIDER} (PAYMENT_PROVIDER)`}`,
    `  Data:                   ${env.DATABASE_URL ? 'PostgreSQL at DATABASE_URL' : `embedded PGlite in ${dataDir}`}`,
    `  Internal gRPC:          ${env.GRPC_INSECURE === 'true' ? 'PLAINTEXT (GRPC_INSECURE=true)' : env.GRPC_TLS_CERT_FILE ? 'mTLS with your GRPC_TLS_* files' : `mTLS, local CA in ${join(dataDir, 'pki')}`}`,
    `  Rate limiter:           ${env.REDIS_URL ? 'Redis at REDIS_URL' : 'in-process (set REDIS_URL to share it between replicas)'}`,
    `  GST documents:          ${env.INVOICE_SUPPLIER_GSTIN ? `supplier GSTIN ${env.INVOICE_SUPPLIER_GSTIN}` : `development documents, not valid for GST${env.INVOICE_SUPPLIER_NAME ? '' : ', demo supplier'} (set INVOICE_SUPPLIER_* before selling)`}`,
  ];
  if (bootstrapToken) {
    lines.push(
      '',
      'First start: this is your platform-admin token. It is shown ONCE and stored only as a hash:',
      '',
      `  export GATEWAY_ADMIN_TOKEN=${bootstrapToken}`,
      '',
      'Next: create an organisation, credit it and create a project (README, "Walkthrough"):',
      `  curl -s ${adminUrl}/organisations -H "Authorization: Bearer $GATEWAY_ADMIN_TOKEN" \\`,
      `    -H 'content-type: application/json' -d '{"name":"Acme","allowed_gateway_models":["demo","demo-embedding"]}'`,
    );
  } else {
    lines.push('', 'Use the platform-admin token printed at first start (README, "Walkthrough").');
  }
  if (setupLink) {
    lines.push(
      '',
      `First start: open this one-time link to set the password of the dashboard's first platform admin (${env.ADMIN_SETUP_EMAIL || 'admin@localhost'}).`,
      'It works once and expires (ADMIN_LINK_TTL_MS, 72 hours by default):',
      '',
      `  ${setupLink}`,
    );
  }
  lines.push('', `In the dashboard, Quickstart shows each member the API's address, a key and code samples (${dashboardUrl}#/quickstart).`, 'Stop with Ctrl-C.');
  printBanner(lines);
}

main().catch(async (error: unknown) => {
  const code = (error as { code?: string }).code;
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
  } else if (code === 'EADDRINUSE') {
    const port = (error as { port?: number }).port;
    process.stderr.write(
      `The gateway could not start: port ${port} is already in use (is another gateway running?). ` +
      'Stop it, or choose other ports with PROXY_HTTP_PORT, ADMIN_HTTP_PORT, DEMO_UPSTREAM_PORT and LOCAL_PAYMENTS_PORT.\n',
    );
  } else {
    process.stderr.write(`The gateway could not start: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
  }
  await stopAll(1);
});
