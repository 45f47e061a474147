/**
 * The image smoke: `pnpm smoke:image` (not part of `vitest run` or CI: it needs podman, the built
 * image and minutes). Runs the migration Jobs' commands and the three services as containers of
 * the built image (tests/deploy/image-containers.ts says how: read-only, non-root, host network,
 * mTLS from a local CA) against the machine's PostgreSQL (a fresh database, dropped at the end)
 * and Redis, with the fake upstream and the local payment provider on the host, then sends through
 * the proxy container a completion, a stream, a request the balance cannot cover (402), and after
 * a top-up through the local provider the same request again (200). Prints each container's start
 * to /readyz time. docs/deploy.md, "Building the image", says how to run it.
 *
 * Environment: IMAGE (default localhost/inr-gateway:dev), SMOKE_POSTGRES_URL (default
 * postgres://postgres@127.0.0.1:5432), SMOKE_REDIS_URL (default redis://127.0.0.1:6379),
 * SMOKE_PORT_BASE (default 18000: ports base..base+9 on loopback), SMOKE_KEEP=1 keeps the
 * containers, the database and the Redis keys for a look afterwards.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeUpstream } from '@gateway/fake-upstream';
import { startLocalPayments } from '@gateway/local-payments';
import { issueSecret } from '@gateway/secrets';
import { describeContainer, podman, runArguments, tlsEnv, waitForOk, writeServiceTls, type ContainerSpec } from './image-containers.ts';

const image = process.env.IMAGE ?? 'localhost/inr-gateway:dev';
const postgresUrl = new URL(process.env.SMOKE_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432');
const redisUrl = process.env.SMOKE_REDIS_URL ?? 'redis://127.0.0.1:6379';
const portBase = Number(process.env.SMOKE_PORT_BASE ?? 18000);
const keep = process.env.SMOKE_KEEP === '1';
const runId = randomBytes(4).toString('hex');
const ports = {
  ledgerHttp: portBase, ledgerGrpc: portBase + 1, ledgerMetrics: portBase + 2,
  adminHttp: portBase + 3, adminGrpc: portBase + 4, adminMetrics: portBase + 5,
  proxyHttp: portBase + 6, proxyMetrics: portBase + 7, upstream: portBase + 8, payments: portBase + 9,
};
const paymentKeys = { keyId: `rzp_test_Smoke${runId}`, keySecret: randomBytes(24).toString('base64url'), webhookSecret: randomBytes(24).toString('base64url') };
const upstreamKey = `sk-smoke-${randomBytes(8).toString('hex')}`;
const adminToken = issueSecret('adminToken').secret;
const workDir = mkdtempSync(join(tmpdir(), 'gw-image-smoke-'));
const databaseName = `gw_smoke_${runId}`;
const databaseUrl = Object.assign(new URL(postgresUrl), { pathname: `/${databaseName}` }).toString();
/** The proxy container's Redis keys (PROXY_REDIS_PREFIX): the RPM pools and the shared outbox's stream. */
const redisPrefix = `gw-smoke-${runId}:`;
const started: string[] = [];
/** What the smoke measured, printed at the end. */
const timings: Record<string, number> = {};

/** Fails the smoke with a message. */
function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(`smoke failed: ${message}`);
}

/** The postgres client tools' connection arguments for SMOKE_POSTGRES_URL. */
function pgArguments(): string[] {
  return ['-h', postgresUrl.hostname, '-p', postgresUrl.port || '5432', '-U', decodeURIComponent(postgresUrl.username || 'postgres')];
}

/** Deletes the smoke's keys from the machine's Redis (the shared outbox's stream has no expiry, so it would stay). */
function dropRedisKeys(): void {
  const keys = execFileSync('redis-cli', ['-u', redisUrl, '--scan', '--pattern', `${redisPrefix}*`], { encoding: 'utf8' }).split('\n').filter(Boolean);
  if (keys.length > 0) execFileSync('redis-cli', ['-u', redisUrl, 'DEL', ...keys]);
}

/** The migration Jobs (deploy/kubernetes/base/migrations): the same commands, DATABASE_URL only. */
const migrations: ContainerSpec[] = ['ledger', 'admin'].map((service) => ({
  name: `gw-smoke-${runId}-${service}-migrate`, command: ['node', `services/${service}/src/migrate-cli.ts`], env: { DATABASE_URL: databaseUrl },
}));

/** The Deployments' containers (deploy/kubernetes/base/<service>.yaml): their commands and environment, on loopback ports. */
const services: Array<ContainerSpec & { readyUrl: string }> = [
  {
    name: `gw-smoke-${runId}-ledger`, tlsRole: 'ledger', command: ['node', 'services/ledger/src/main.ts'], readyUrl: `http://127.0.0.1:${ports.ledgerHttp}/readyz`,
    env: {
      BIND_HOST: '127.0.0.1', LOG_LEVEL: 'info', SHUTDOWN_GRACE_MS: '30000', ...tlsEnv, DATABASE_URL: databaseUrl, LEDGER_MIGRATIONS: 'verify',
      LEDGER_HTTP_PORT: String(ports.ledgerHttp), LEDGER_GRPC_PORT: String(ports.ledgerGrpc), LEDGER_METRICS_PORT: String(ports.ledgerMetrics),
    },
  },
  {
    name: `gw-smoke-${runId}-admin`, tlsRole: 'admin', command: ['node', 'services/admin/src/main.ts'], readyUrl: `http://127.0.0.1:${ports.adminHttp}/readyz`,
    env: {
      BIND_HOST: '127.0.0.1', LOG_LEVEL: 'info', SHUTDOWN_GRACE_MS: '30000', ...tlsEnv, DATABASE_URL: databaseUrl, ADMIN_MIGRATIONS: 'verify',
      ADMIN_HTTP_PORT: String(ports.adminHttp), ADMIN_GRPC_PORT: String(ports.adminGrpc), ADMIN_METRICS_PORT: String(ports.adminMetrics),
      LEDGER_GRPC_URL: `127.0.0.1:${ports.ledgerGrpc}`, ADMIN_ENCRYPTION_KEY: randomBytes(32).toString('base64'), ADMIN_BOOTSTRAP_TOKEN: adminToken,
      // The fake upstream is on loopback (a production admin keeps this false: SSRF guard).
      ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'true',
      // The local provider, as `pnpm start` wires it: free credit, so development mode only.
      PAYMENT_PROVIDER: 'local', PAYMENT_DEVELOPMENT_MODE: 'true', INVOICE_DEVELOPMENT_MODE: 'true', LOCAL_PAYMENTS_URL: `http://127.0.0.1:${ports.payments}`,
      RAZORPAY_KEY_ID: paymentKeys.keyId, RAZORPAY_KEY_SECRET: paymentKeys.keySecret, RAZORPAY_WEBHOOK_SECRET: paymentKeys.webhookSecret,
    },
  },
  {
    name: `gw-smoke-${runId}-proxy`, tlsRole: 'proxy', command: ['node', 'services/proxy/src/main.ts'], readyUrl: `http://127.0.0.1:${ports.proxyHttp}/readyz`,
    env: {
      BIND_HOST: '127.0.0.1', LOG_LEVEL: 'info', SHUTDOWN_GRACE_MS: '30000', ...tlsEnv, LEDGER_CALL_TIMEOUT_MS: '5000',
      PROXY_HTTP_PORT: String(ports.proxyHttp), PROXY_METRICS_PORT: String(ports.proxyMetrics), PROXY_ID: `gw-smoke-${runId}-proxy`,
      NODE_OPTIONS: '--max-semi-space-size=8 --max-old-space-size=512', MALLOC_ARENA_MAX: '2',
      ADMIN_GRPC_URL: `127.0.0.1:${ports.adminGrpc}`, LEDGER_GRPC_URL: `127.0.0.1:${ports.ledgerGrpc}`,
      REDIS_URL: redisUrl, PROXY_REDIS_PREFIX: `${redisPrefix}rpm:`,
    },
  },
];

const adminBase = `http://127.0.0.1:${ports.adminHttp}/admin/v1`;
const proxyBase = `http://127.0.0.1:${ports.proxyHttp}/v1`;

/** An admin API call as the platform admin; throws on anything but 2xx. */
async function admin(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Record<string, any>> {
  const response = await fetch(`${adminBase}${path}`, {
    method, headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  check(response.ok, `${method} ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text) as Record<string, any>;
}

/** A chat completion through the proxy container with `apiKey`: its status and body text. */
async function complete(apiKey: string, stream: boolean): Promise<{ status: number; text: string }> {
  const response = await fetch(`${proxyBase}/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'smoke-chat', stream, messages: [{ role: 'user', content: 'Hello from the image smoke' }] }),
  });
  return { status: response.status, text: await response.text() };
}

/** The organisation's balance once nothing is held (Settles and the credit grant's return land just after a response). */
async function settledBalance(organisationId: string): Promise<Record<string, any>> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const balance = await admin('GET', `/organisations/${organisationId}/balance`);
    if (balance.held_micros === '0' || Date.now() > deadline) return balance;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** An organisation allowed the smoke model, with `creditMicros` of opening credit and a project's API key. */
async function organisation(name: string, creditMicros: bigint): Promise<{ id: string; apiKey: string }> {
  const { id } = await admin('POST', '/organisations', { name, allowed_gateway_models: ['smoke-chat'] }) as { id: string };
  await admin('POST', `/organisations/${id}/credits`, { amount_micros: creditMicros.toString(), reason: 'smoke opening credit' }, { 'idempotency-key': `smoke-${name}` });
  const { api_key: apiKey } = await admin('POST', `/organisations/${id}/projects`, { name: 'smoke' }) as { api_key: string };
  return { id, apiKey };
}

/** A completion and a stream, billed exactly: the balance falls by the sum of the usage rows' costs. */
async function completionAndStream(): Promise<void> {
  const creditMicros = 10_000_000n;
  const org = await organisation('Smoke', creditMicros);
  const completion = await complete(org.apiKey, false);
  check(completion.status === 200, `completion answered ${completion.status}: ${completion.text}`);
  check((JSON.parse(completion.text) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content.length > 0, 'the completion has no text');
  const stream = await complete(org.apiKey, true);
  check(stream.status === 200 && stream.text.includes('"delta"') && stream.text.trimEnd().endsWith('data: [DONE]'), `stream answered ${stream.status}: ${stream.text.slice(0, 500)}`);
  const balance = await settledBalance(org.id);
  const usage = await admin('GET', `/organisations/${org.id}/usage`) as { data: Array<{ cost_micros: string }> };
  const spent = usage.data.reduce((sum, row) => sum + BigInt(row.cost_micros), 0n);
  check(usage.data.length === 2 && spent > 0n, `usage rows: ${JSON.stringify(usage.data)}`);
  check(balance.held_micros === '0' && BigInt(balance.available_micros as string) === creditMicros - spent, `balance ${JSON.stringify(balance)} after spending ${spent} µ₹`);
  console.log(`completion and stream: 200, 200; billed ${spent} µ₹, balance ${balance.available_micros as string} µ₹`);
}

/** A request the balance cannot cover (402), a top-up through the local provider, then the same request (200). */
async function shortBalanceThenTopUp(payments: Awaited<ReturnType<typeof startLocalPayments>>): Promise<void> {
  const org = await organisation('Short', 1n);
  const refused = await complete(org.apiKey, false);
  check(refused.status === 402, `a 1 µ₹ balance answered ${refused.status}: ${refused.text}`);
  const creditMicros = 100_000_000n;
  const { id: packageId } = await admin('POST', '/topup-packages', { name: 'Smoke ₹100', price_paise: '11800', credit_micros: creditMicros.toString() }) as { id: string };
  await admin('PUT', `/organisations/${org.id}/billing-profile`, { legal_name: 'Smoke Buyer', address: 'Pune', state_code: '27' });
  const { topup, checkout } = await admin('POST', `/organisations/${org.id}/topups`, { package_id: packageId }) as { topup: { id: string }; checkout: { order_id: string } };
  const paid = payments.pay(checkout.order_id, 'pay');
  check(paid.outcome === 'paid', `the local provider answered ${paid.outcome}`);
  await admin('POST', `/organisations/${org.id}/topups/${topup.id}/checkout-callback`, paid.checkout);
  const deadline = Date.now() + 30_000;
  let state = '';
  while (!['credited', 'invoiced'].includes(state)) {
    check(Date.now() < deadline, `the top-up stayed ${state}`);
    state = (await admin('GET', `/organisations/${org.id}/topups/${topup.id}`)).state as string;
    if (!['credited', 'invoiced'].includes(state)) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const balance = await settledBalance(org.id);
  check(BigInt(balance.available_micros as string) === creditMicros + 1n, `balance after the top-up: ${JSON.stringify(balance)}`);
  const accepted = await complete(org.apiKey, false);
  check(accepted.status === 200, `after the top-up the completion answered ${accepted.status}: ${accepted.text}`);
  console.log(`short balance: 402; top-up ${state} (+${creditMicros} µ₹); then 200`);
}

/** Starts a container and waits for its /readyz; records the time from `podman run` to ready. */
async function startService(spec: (typeof services)[number], tlsDirs: Record<string, string>): Promise<void> {
  const startedAt = Date.now();
  started.push(spec.name);
  await podman(runArguments(image, spec, workDir, tlsDirs, true));
  // What the manifests require of the pod, as the runtime applied it (not only as asked).
  const applied = (await podman(['inspect', '--format', '{{.HostConfig.ReadonlyRootfs}} {{.Config.User}} [{{join .EffectiveCaps ","}}]', spec.name])).trim();
  check(applied === 'true 1000:1000 []', `${spec.name} runs with read-only root, user and capabilities ${applied}`);
  timings[`${spec.name.replace(`gw-smoke-${runId}-`, '')} start to ready (ms)`] = await waitForOk(spec.readyUrl, 120_000, startedAt)
    .catch(async (error: Error) => { throw new Error(`${error.message}\n${await describeContainer(spec.name)}`); });
}

async function main(): Promise<void> {
  const upstream = await startFakeUpstream({ host: '127.0.0.1', port: ports.upstream, requiredApiKey: upstreamKey });
  const payments = await startLocalPayments({ host: '127.0.0.1', port: ports.payments, ...paymentKeys });
  payments.setWebhookUrl(`http://127.0.0.1:${ports.adminHttp}/webhooks/razorpay`);
  execFileSync('createdb', [...pgArguments(), databaseName]);
  try {
    const tlsDirs = await writeServiceTls(workDir);
    for (const job of migrations) {
      const startedAt = Date.now();
      await podman(runArguments(image, job, workDir, tlsDirs, false));
      timings[`${job.name.replace(`gw-smoke-${runId}-`, '')} (ms)`] = Date.now() - startedAt;
    }
    for (const service of services) await startService(service, tlsDirs);
    await admin('POST', '/gateway-models', {
      slug: 'smoke-chat', display_name: 'Smoke Chat', default_max_tokens: 64, max_context_tokens: 4096,
      input_price_micros_per_mtok: '2000003', output_price_micros_per_mtok: '5000007',
      upstream: { provider_kind: 'openai_compatible', base_url: upstream.baseUrl, model: 'smoke-upstream-model', api_key: upstreamKey },
    });
    await completionAndStream();
    await shortBalanceThenTopUp(payments);
    const size = Number((await podman(['image', 'inspect', '--format', '{{.Size}}', image])).trim());
    console.log(JSON.stringify({ image, imageBytes: size, database: databaseName, ...timings }, null, 2));
    console.log('image smoke passed');
  } catch (error) {
    for (const name of started) console.error(await describeContainer(name));
    throw error;
  } finally {
    if (!keep) {
      for (const name of started.reverse()) await podman(['rm', '--force', '--time', '35', name]).catch(() => '');
      execFileSync('dropdb', [...pgArguments(), '--force', databaseName]);
      dropRedisKeys();
      rmSync(workDir, { recursive: true, force: true });
    }
    await payments.close();
    await upstream.close();
  }
}

await main();
