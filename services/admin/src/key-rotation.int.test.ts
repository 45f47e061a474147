/**
 * Rotating ADMIN_ENCRYPTION_KEY over real PostgreSQL (docs/operations.md "Rotating
 * ADMIN_ENCRYPTION_KEY"): secrets sealed under key A (one in the old v1 format) still serve after
 * the admin moves to key B with A previous (the proxy receives the upstream credential, the alert
 * webhook is signed with its secret); `reencrypt` re-seals them all under B, idempotently; with A
 * dropped everything still serves; a row under a key nobody configured is reported by its key id.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openDatabase, type Database } from '@gateway/db';
import { createTestDatabase, runNodeScript, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { runAdminCli } from './cli.ts';
import { webhookSecretContext } from './alerts/domain/alert-jobs.ts';
import { webhookPutResponse, webhookTestResponse } from './alerts/http/alert-schemas.ts';
import { signatureHeader } from './billing/domain/webhook-signature.ts';
import { credentialContext } from './catalog/domain/config-snapshot.ts';
import { createCredentialCipher } from './common/domain/credential-cipher.ts';
import { reencryptSealedValues } from './key-rotation/reencrypt.ts';
import { startAdminHarness, type AdminHarness } from './test-support/admin-harness.ts';
import { startAlertReceiver, type AlertReceiver } from './test-support/alert-receiver.ts';
import { connectFakeProxy } from './test-support/fake-proxy.ts';
import { startFakeLedger, type FakeLedger } from './test-support/fake-ledger.ts';
import { sealLegacyV1 } from './test-support/legacy-seal.ts';

const serverUrl = testPostgresUrl();
const describePg = describe.skipIf(!serverUrl);
const cliPath = fileURLToPath(new URL('./cli.ts', import.meta.url));

const keyA = randomBytes(32).toString('base64');
const keyB = randomBytes(32).toString('base64');
const keyC = randomBytes(32).toString('base64'); // configured nowhere
const [idA, idB, idC] = [keyA, keyB, keyC].map((keyBase64) => createCredentialCipher(keyBase64).currentKeyId) as [string, string, string];
const credentials = { 'rot-sealed': `sk-a-${randomBytes(6).toString('hex')}`, 'rot-legacy': `sk-v1-${randomBytes(6).toString('hex')}`, 'rot-new': `sk-b-${randomBytes(6).toString('hex')}` };

let testDatabase: TestDatabase;
let db: Database;
let ledger: FakeLedger;
let receiver: AlertReceiver;
let admin: AdminHarness | undefined;
/** The platform-admin token the first admin was bootstrapped with (every restart keeps it). */
let token: string | undefined;

/** (Re)starts the admin on the test database with these keys. */
async function startAdmin(current: string, previous: string[] = []): Promise<AdminHarness> {
  await admin?.close();
  admin = await startAdminHarness({
    databaseUrl: testDatabase.url, ledger, encryptionKey: current, ...(token === undefined ? {} : { token }),
    env: { ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'true', ALERT_POLL_MS: '20', ADMIN_ENCRYPTION_KEYS_PREVIOUS: previous.join(',') },
  });
  token = admin.token;
  return admin;
}

async function createModel(slug: keyof typeof credentials): Promise<void> {
  const response = await admin!.request('POST', '/admin/v1/gateway-models', {
    slug, default_max_tokens: 16, max_context_tokens: 1024, input_price_micros_per_mtok: '1000000', output_price_micros_per_mtok: '1000000',
    upstream: { provider_kind: 'openai_compatible', base_url: 'http://127.0.0.1:9/v1', model: 'vendor-m', api_key: credentials[slug] },
  });
  expect(response.status, response.text).toBe(201);
}

/** An organisation with an alert webhook to the receiver; returns its id and the signing secret (shown once). */
async function organisationWithWebhook(name: string): Promise<{ id: string; secret: string }> {
  const organisation = await admin!.request('POST', '/admin/v1/organisations', { name });
  expect(organisation.status, organisation.text).toBe(201);
  const id = organisation.json.id as string;
  const webhook = await admin!.request('PUT', `/admin/v1/organisations/${id}/webhook`, { url: `${receiver.baseUrl}/${id}`, format: 'json' });
  expect(webhook.status, webhook.text).toBe(200);
  return { id, secret: webhookPutResponse.parse(webhook.json).signing_secret! };
}

/** The upstream credentials the running admin hands a proxy in a full snapshot, by model slug. */
async function credentialsAProxyReceives(): Promise<Record<string, string>> {
  const proxy = connectFakeProxy(admin!.grpcTarget, `proxy-${randomBytes(3).toString('hex')}`, { autoAck: true });
  try {
    const snapshot = await proxy.next((update) => update.full);
    return Object.fromEntries(snapshot.gatewayModels.filter((model) => model.slug in credentials).map((model) => [model.slug, model.upstream!.apiKey]));
  } finally {
    proxy.close();
  }
}

/** Sends a test alert and returns whether the request the receiver got is signed with `secret`. */
async function testAlertIsSignedWith(organisationId: string, secret: string): Promise<boolean> {
  const sent = await admin!.request('POST', `/admin/v1/organisations/${organisationId}/webhook/test`);
  expect(sent.status, sent.text).toBe(202);
  const deliveryId = webhookTestResponse.parse(sent.json).delivery_id;
  const request = await vi.waitFor(() => {
    const found = receiver.requestsTo(`/${organisationId}`).find((candidate) => candidate.headers['x-gateway-delivery-id'] === deliveryId);
    expect(found).toBeDefined();
    return found!;
  }, { timeout: 15_000, interval: 20 });
  const header = request.headers['x-gateway-signature'] as string;
  const time = Number(/^t=(\d+),/.exec(header)![1]);
  return header === signatureHeader(secret, request.body, time);
}

/** Every stored sealed value, as `table/row`: its prefix up to the key id. */
async function storedFormats(): Promise<Record<string, string>> {
  const { rows } = await db.query<{ name: string; value: string }>(
    `SELECT 'gateway_models/' || slug AS name, upstream_api_key_encrypted AS value FROM gateway_models WHERE upstream_api_key_encrypted IS NOT NULL
      UNION ALL SELECT 'alert_webhooks/' || organisation_id, secret_sealed FROM alert_webhooks`,
  );
  return Object.fromEntries(rows.map((row) => [row.name, row.value.startsWith('v1:') ? 'v1' : row.value.split(':').slice(0, 2).join(':')]));
}

beforeAll(async () => {
  if (!serverUrl) return;
  testDatabase = await createTestDatabase(serverUrl);
  ledger = await startFakeLedger();
  receiver = await startAlertReceiver();
  await startAdmin(keyA);
  db = await openDatabase({ url: testDatabase.url, schema: 'admin', poolSize: 2 });
});

afterAll(async () => {
  await admin?.close();
  await db?.close();
  await ledger?.close();
  await receiver?.close();
  await testDatabase?.drop();
});

describePg('rotating ADMIN_ENCRYPTION_KEY', () => {
  it('knows every sealed column the schema has (a new one must join the list re-encryption walks)', async () => {
    const { rows } = await db.query<{ name: string }>(
      `SELECT table_name || '.' || column_name AS name FROM information_schema.columns
        WHERE table_schema = 'admin' AND (column_name LIKE '%sealed%' OR column_name LIKE '%encrypted%') ORDER BY 1`,
    );
    const walked = await reencryptSealedValues(db, createCredentialCipher(keyA), { checkOnly: true });
    expect(rows.map((row) => row.name)).toEqual(walked.columns.map((column) => `${column.table}.${column.column}`).sort());
  });

  it('serves every secret through a rotation, re-seals them under the new key, and serves them with the old key dropped', async () => {
    // Under key A: a credential, a v1 credential (written before key ids), a webhook secret.
    await createModel('rot-sealed');
    await createModel('rot-legacy');
    await db.query('UPDATE gateway_models SET upstream_api_key_encrypted = $1 WHERE slug = $2',
      [sealLegacyV1(keyA, credentials['rot-legacy'], credentialContext('rot-legacy')), 'rot-legacy']);
    const organisation = await organisationWithWebhook('Rotating');
    expect(await storedFormats()).toEqual({
      'gateway_models/rot-sealed': `v2:${idA}`, 'gateway_models/rot-legacy': 'v1', [`alert_webhooks/${organisation.id}`]: `v2:${idA}`,
    });

    // Roll out B with A previous: everything still opens, and new secrets are sealed under B.
    await startAdmin(keyB, [keyA]);
    expect(await credentialsAProxyReceives()).toEqual({ 'rot-sealed': credentials['rot-sealed'], 'rot-legacy': credentials['rot-legacy'] });
    expect(await testAlertIsSignedWith(organisation.id, organisation.secret)).toBe(true);
    await createModel('rot-new');
    expect((await storedFormats())['gateway_models/rot-new']).toBe(`v2:${idB}`);

    const rotating = createCredentialCipher(keyB, [keyA]);
    const check = await runAdminCli(db, ['reencrypt', '--check'], { cipher: rotating });
    expect(check.exitCode, check.stdout).toBe(1);
    expect(check.stdout).toContain(`key id ${idB}`);
    expect(check.stdout).toContain(`gateway_models.upstream_api_key_encrypted: seen 3, re-sealed 0, already current 1, still to re-seal 2 (key id ${idA}: 2, old v1 format: 1)`);
    expect(check.stdout).toContain(`alert_webhooks.secret_sealed: seen 1, re-sealed 0, already current 0, still to re-seal 1 (key id ${idA}: 1)`);
    expect(check.stdout).toContain('still to re-seal 3 (needing a previous key 3)');
    expect(await storedFormats()).toMatchObject({ 'gateway_models/rot-sealed': `v2:${idA}` }); // --check writes nothing

    const run = await runAdminCli(db, ['reencrypt', '--batch-size', '1'], { cipher: rotating });
    expect(run.exitCode, run.stdout).toBe(0);
    expect(run.stdout).toContain('total: seen 4, re-sealed 3, already current 1, still to re-seal 0 (needing a previous key 0), unreadable 0');
    expect(Object.values(await storedFormats())).toEqual([`v2:${idB}`, `v2:${idB}`, `v2:${idB}`, `v2:${idB}`]);
    const again = await runAdminCli(db, ['reencrypt'], { cipher: rotating });
    expect(again.stdout).toContain('total: seen 4, re-sealed 0, already current 4');
    const clean = await runAdminCli(db, ['reencrypt', '--check'], { cipher: rotating });
    expect([clean.exitCode, clean.stdout]).toEqual([0, expect.stringContaining('ADMIN_ENCRYPTION_KEYS_PREVIOUS may be emptied')]);

    // A v1 value under the current key wants re-sealing but no previous key: --check passes, reencrypt re-seals it.
    await db.query('UPDATE gateway_models SET upstream_api_key_encrypted = $1 WHERE slug = $2',
      [sealLegacyV1(keyB, credentials['rot-legacy'], credentialContext('rot-legacy')), 'rot-legacy']);
    const legacyCheck = await runAdminCli(db, ['reencrypt', '--check'], { cipher: createCredentialCipher(keyB) });
    expect([legacyCheck.exitCode, legacyCheck.stdout]).toEqual([0, expect.stringContaining(`still to re-seal 1 (needing a previous key 0)`)]);
    expect((await runAdminCli(db, ['reencrypt'], { cipher: createCredentialCipher(keyB) })).stdout).toContain('re-sealed 1');
    expect((await storedFormats())['gateway_models/rot-legacy']).toBe(`v2:${idB}`);

    // Drop A: everything opens with B alone.
    await startAdmin(keyB);
    expect(await credentialsAProxyReceives()).toEqual(credentials);
    expect(await testAlertIsSignedWith(organisation.id, organisation.secret)).toBe(true);
    // Secrets never reach the command's output.
    for (const output of [check.stdout, run.stdout, clean.stdout]) {
      for (const secret of [...Object.values(credentials), organisation.secret, keyA, keyB]) expect(output).not.toContain(secret);
    }
  });

  it('reports a row sealed under a key nobody configured by its key id, never skipping it, until that key is supplied', async () => {
    const stray = await organisationWithWebhook('Stray key');
    const strayCipher = createCredentialCipher(keyC);
    await db.query('UPDATE alert_webhooks SET secret_sealed = $1 WHERE organisation_id = $2',
      [strayCipher.encrypt(stray.secret, webhookSecretContext(stray.id)), stray.id]);

    // The real process, configured through its environment as an operator runs it.
    const env = { DATABASE_URL: testDatabase.url, ADMIN_ENCRYPTION_KEY: keyB };
    const reported = await runNodeScript(cliPath, env, ['reencrypt']);
    expect(reported.code, reported.stderr).toBe(1);
    expect(reported.stdout).toContain(`UNREADABLE alert_webhooks "${stray.id}": stored secret was sealed with encryption key id ${idC}, which is not configured`);
    expect(reported.stdout).toContain(`unreadable 1`);
    expect(reported.stdout).toContain(`Add the key(s) with id ${idC} to ADMIN_ENCRYPTION_KEYS_PREVIOUS`);
    expect(reported.stdout).not.toContain(keyC);
    expect((await runAdminCli(db, ['reencrypt', '--check'], { cipher: createCredentialCipher(keyB) })).exitCode).toBe(1);

    const supplied = await runNodeScript(cliPath, { ...env, ADMIN_ENCRYPTION_KEYS_PREVIOUS: keyC }, ['reencrypt']);
    expect(supplied.code, supplied.stdout + supplied.stderr).toBe(0);
    expect(supplied.stdout).toContain('re-sealed 1');
    expect((await storedFormats())[`alert_webhooks/${stray.id}`]).toBe(`v2:${idB}`);
    expect(await testAlertIsSignedWith(stray.id, stray.secret)).toBe(true);

    const misconfigured = await runNodeScript(cliPath, { ...env, ADMIN_ENCRYPTION_KEYS_PREVIOUS: 'c2hvcnQ=' }, ['reencrypt', '--check']);
    expect(misconfigured.code).not.toBe(0);
    expect(misconfigured.stderr).toMatch(/ADMIN_ENCRYPTION_KEYS_PREVIOUS.*entry 1 must decode to exactly 32 bytes/);
    expect(misconfigured.stderr).not.toContain('c2hvcnQ=');
  }, 90_000); // three runs of the command as a process of its own, each loading the TypeScript sources
});
