/**
 * Alert webhooks over real PostgreSQL and a real local HTTP receiver: the signature verifies with
 * the snippet docs/alerts.md publishes, a failing receiver is retried with growing spacing and
 * the same alert id until it succeeds, one that always fails ends 'failed' after the window, the
 * Slack shape, the secret shown once, and who may read and configure (viewer, owner, tokens).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Database } from '@gateway/db';
import { testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { insertMembership, insertPerson } from './people/domain/people-store.ts';
import { createSessions } from './people/domain/sessions.ts';
import { deliveryListResponse, webhookGetResponse, webhookPutResponse, webhookTestResponse } from './alerts/http/alert-schemas.ts';
import { errorResponse } from './common/http/response-schemas.ts';
import { startAdminHarness, type AdminHarness } from './test-support/admin-harness.ts';
import { startPostgresAdmin, type PostgresAdmin } from './test-support/postgres-admin.ts';
import { startAlertReceiver, type AlertReceiver } from './test-support/alert-receiver.ts';
import { captureLogs, type CapturedLogs } from './test-support/captured-logs.ts';

const serverUrl = testPostgresUrl();
const describePg = describe.skipIf(!serverUrl);

/** Retry schedule of the admin under test: 100 ms doubling, for 2 s after the first attempt. */
const retryBaseMs = 100;
const retryWindowMs = 2_000;

type Verify = (secret: string, header: string, rawBody: string) => boolean;

let testDatabase: TestDatabase;
let postgres: PostgresAdmin | undefined;
let admin: AdminHarness;
let db: Database;
let receiver: AlertReceiver;
let logs: CapturedLogs;
let verifyGatewaySignature: Verify;
let snippetDir: string;

/** The verification snippet exactly as docs/alerts.md shows it, loaded as a module. */
async function loadDocumentedSnippet(): Promise<Verify> {
  const doc = readFileSync(new URL('../../../docs/alerts.md', import.meta.url), 'utf8');
  const block = /<!-- verify-snippet:start -->\s*```js\n([\s\S]*?)```\s*<!-- verify-snippet:end -->/.exec(doc);
  if (!block) throw new Error('docs/alerts.md has no verification snippet between the markers');
  snippetDir = mkdtempSync(join(tmpdir(), 'alerts-snippet-'));
  const file = join(snippetDir, 'verify.mjs');
  writeFileSync(file, block[1]!);
  const module = await import(pathToFileURL(file).href) as { verifyGatewaySignature: Verify };
  return module.verifyGatewaySignature;
}

beforeAll(async () => {
  if (!serverUrl) return;
  verifyGatewaySignature = await loadDocumentedSnippet();
  receiver = await startAlertReceiver();
  logs = captureLogs();
  postgres = await startPostgresAdmin(serverUrl, {
    logger: logs.logger,
    env: {
      ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'true',
      ALERT_POLL_MS: '20',
      ALERT_RETRY_BASE_MS: String(retryBaseMs),
      ALERT_RETRY_WINDOW_MS: String(retryWindowMs),
      ALERT_WEBHOOK_TIMEOUT_MS: '2000',
    },
  });
  ({ testDatabase, admin, db } = postgres);
});

afterAll(async () => {
  await postgres?.close();
  await receiver?.close();
  if (snippetDir) rmSync(snippetDir, { recursive: true, force: true });
});

async function createOrganisation(name: string): Promise<string> {
  const response = await admin.request('POST', '/admin/v1/organisations', { name });
  expect(response.status, response.text).toBe(201);
  return response.json.id as string;
}

/** Sets an organisation's webhook to a receiver path; the signing secret shown once. */
async function setWebhook(organisationId: string, path: string, format: 'json' | 'slack' = 'json'): Promise<string> {
  const response = await admin.request('PUT', `/admin/v1/organisations/${organisationId}/webhook`, { url: `${receiver.baseUrl}${path}`, format });
  expect(response.status, response.text).toBe(200);
  const body = webhookPutResponse.parse(response.json);
  expect(body.signing_secret).not.toBeNull();
  return body.signing_secret!;
}

async function sendTest(organisationId: string): Promise<string> {
  const response = await admin.request('POST', `/admin/v1/organisations/${organisationId}/webhook/test`);
  expect(response.status, response.text).toBe(202);
  return webhookTestResponse.parse(response.json).delivery_id;
}

async function deliveryOf(organisationId: string, deliveryId: string) {
  const response = await admin.request('GET', `/admin/v1/organisations/${organisationId}/webhook/deliveries?limit=100`);
  expect(response.status, response.text).toBe(200);
  const delivery = deliveryListResponse.parse(response.json).data.find((entry) => entry.id === deliveryId);
  expect(delivery).toBeDefined();
  return delivery!;
}

/** Waits until the delivery has left 'pending', then returns it. */
async function settledDelivery(organisationId: string, deliveryId: string) {
  return vi.waitFor(async () => {
    const delivery = await deliveryOf(organisationId, deliveryId);
    expect(delivery.state).not.toBe('pending');
    return delivery;
  }, { timeout: 15_000, interval: 50 });
}

describePg('alert webhook delivery', () => {
  it('retries a failing receiver with doubling spacing and the same alert id, then delivers; every request verifies with the documented snippet', async () => {
    const organisationId = await createOrganisation('Flaky receiver');
    const secret = await setWebhook(organisationId, '/flaky');
    receiver.failFirst('/flaky', 3);
    const deliveryId = await sendTest(organisationId);

    const delivery = await settledDelivery(organisationId, deliveryId);
    expect(delivery.state).toBe('delivered');
    expect(delivery.attempts.map((attempt) => [attempt.attempt, attempt.status_code, attempt.error])).toEqual([
      [1, 500, 'http_status'], [2, 500, 'http_status'], [3, 500, 'http_status'], [4, 204, null],
    ]);
    // Each failure scheduled the next attempt base·2^(n−1) after it ended; each attempt came no earlier.
    const failed = delivery.attempts.slice(0, 3);
    failed.forEach((attempt, index) => {
      const scheduledAfter = Date.parse(attempt.next_attempt_at!) - Date.parse(attempt.attempted_at) - attempt.duration_ms;
      expect(scheduledAfter).toBe(retryBaseMs * 2 ** index);
      expect(Date.parse(delivery.attempts[index + 1]!.attempted_at)).toBeGreaterThanOrEqual(Date.parse(attempt.next_attempt_at!));
    });
    const spacing = delivery.attempts.slice(1).map((attempt, index) => Date.parse(attempt.attempted_at) - Date.parse(delivery.attempts[index]!.attempted_at));
    expect(spacing[1]!).toBeGreaterThan(spacing[0]!);
    expect(spacing[2]!).toBeGreaterThan(spacing[1]!);
    expect(delivery.attempts[3]!.next_attempt_at).toBeNull();

    const received = receiver.requestsTo('/flaky');
    expect(received.map((request) => request.answeredStatus)).toEqual([500, 500, 500, 204]);
    const alertIds = new Set(received.map((request) => request.headers['x-gateway-alert-id']));
    expect(alertIds).toEqual(new Set([delivery.alert_id]));
    expect(new Set(received.map((request) => request.body)).size).toBe(1);
    for (const request of received) {
      expect(request.headers['content-type']).toBe('application/json');
      expect(verifyGatewaySignature(secret, request.headers['x-gateway-signature'] as string, request.body)).toBe(true);
      // Another body or secret does not verify: the snippet checks something.
      expect(verifyGatewaySignature(secret, request.headers['x-gateway-signature'] as string, `${request.body} `)).toBe(false);
      expect(verifyGatewaySignature(`${secret}x`, request.headers['x-gateway-signature'] as string, request.body)).toBe(false);
    }
    const envelope = JSON.parse(received[0]!.body);
    expect(envelope).toEqual({
      id: delivery.alert_id, type: 'test', created_at: expect.any(String), organisation_id: organisationId,
      data: { project_id: null, message: 'Test alert for "Flaky receiver": the webhook receives alerts.' },
    });
  });

  it('never makes one attempt twice when two admin replicas deliver from the same database', async () => {
    const replica = await startAdminHarness({
      databaseUrl: testDatabase.url, token: admin.token, encryptionKey: admin.encryptionKey, ledger: admin.ledger,
      env: { ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'true', ALERT_POLL_MS: '5' },
    });
    try {
      const organisationId = await createOrganisation('Two replicas');
      await setWebhook(organisationId, '/replicas');
      const deliveryIds: string[] = [];
      for (let index = 0; index < 30; index += 1) deliveryIds.push(await sendTest(organisationId));
      await vi.waitFor(async () => {
        const response = await admin.request('GET', `/admin/v1/organisations/${organisationId}/webhook/deliveries?limit=100`);
        const states = deliveryListResponse.parse(response.json).data.map((delivery) => delivery.state);
        expect(states).toEqual(deliveryIds.map(() => 'delivered'));
      }, { timeout: 15_000, interval: 50 });
      const received = receiver.requestsTo('/replicas').map((request) => request.headers['x-gateway-alert-id']);
      expect(received).toHaveLength(30);
      expect(new Set(received).size).toBe(30);
    } finally {
      await replica.close();
    }
  });

  it('gives up on a receiver that always fails once the retry window has passed', async () => {
    const organisationId = await createOrganisation('Broken receiver');
    await setWebhook(organisationId, '/broken');
    receiver.failFirst('/broken', Number.POSITIVE_INFINITY);
    const deliveryId = await sendTest(organisationId);

    const delivery = await settledDelivery(organisationId, deliveryId);
    expect(delivery.state).toBe('failed');
    expect(delivery.next_attempt_at).toBeNull();
    expect(delivery.attempts.length).toBeGreaterThanOrEqual(3);
    expect(delivery.attempts.every((attempt) => attempt.status_code === 500 && attempt.error === 'http_status')).toBe(true);
    const last = delivery.attempts.at(-1)!;
    expect(last.next_attempt_at).toBeNull();
    // The attempt it did not make would have come after the window (counted from the first attempt).
    const firstAt = Date.parse(delivery.attempts[0]!.attempted_at);
    const wouldBeAt = Date.parse(last.attempted_at) + last.duration_ms + retryBaseMs * 2 ** (delivery.attempts.length - 1);
    expect(wouldBeAt).toBeGreaterThan(firstAt + retryWindowMs);
    expect(delivery.attempts.slice(0, -1).every((attempt) => Date.parse(attempt.next_attempt_at!) <= firstAt + retryWindowMs)).toBe(true);
    expect(receiver.requestsTo('/broken')).toHaveLength(delivery.attempts.length);
  });

  it('logs a connection failure by class, never the URL', async () => {
    const organisationId = await createOrganisation('Gone receiver');
    // A port nothing listens on: the receiver's own port once closed would race; port 1 is refused on loopback.
    const response = await admin.request('PUT', `/admin/v1/organisations/${organisationId}/webhook`, { url: 'http://127.0.0.1:1/gone-secret-path', format: 'json' });
    expect(response.status, response.text).toBe(200);
    const deliveryId = await sendTest(organisationId);
    const delivery = await vi.waitFor(async () => {
      const current = await deliveryOf(organisationId, deliveryId);
      expect(current.attempts.length).toBeGreaterThanOrEqual(1);
      return current;
    }, { timeout: 10_000, interval: 50 });
    expect(delivery.attempts[0]).toMatchObject({ status_code: null, error: 'connection_refused' });
    expect(JSON.stringify(delivery)).not.toContain('gone-secret-path');
    expect(logs.text()).not.toContain('gone-secret-path');
  });

  it('sends the Slack incoming-webhook shape to a slack webhook, signed too', async () => {
    const organisationId = await createOrganisation('Slack team');
    const secret = await setWebhook(organisationId, '/slack', 'slack');
    const deliveryId = await sendTest(organisationId);
    const delivery = await settledDelivery(organisationId, deliveryId);
    expect(delivery.state).toBe('delivered');
    const [request] = receiver.requestsTo('/slack');
    const body = JSON.parse(request!.body);
    expect(Object.keys(body).sort()).toEqual(['blocks', 'text']);
    expect(body.text).toBe('Test alert: Test alert for "Slack team": the webhook receives alerts.');
    expect(body.blocks[0]).toEqual({ type: 'header', text: { type: 'plain_text', text: 'Test alert' } });
    expect(body.blocks[1]).toEqual({ type: 'section', text: { type: 'mrkdwn', text: 'Test alert for "Slack team": the webhook receives alerts.' } });
    expect(body.blocks[2].elements[0].text).toContain(delivery.alert_id);
    expect(request!.headers['x-gateway-alert-id']).toBe(delivery.alert_id);
    expect(verifyGatewaySignature(secret, request!.headers['x-gateway-signature'] as string, request!.body)).toBe(true);
  });

  it('shows the signing secret once (creation, rotation), then only its hint; never in the audit log or the logs', async () => {
    const organisationId = await createOrganisation('Secret keeper');
    const first = await setWebhook(organisationId, '/secret');
    expect(first).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);

    const get = await admin.request('GET', `/admin/v1/organisations/${organisationId}/webhook`);
    expect(get.status).toBe(200);
    expect(webhookGetResponse.parse(get.json).webhook).toMatchObject({ url: `${receiver.baseUrl}/secret`, format: 'json', secret_hint: `whsec_…${first.slice(-4)}` });
    expect(get.text).not.toContain(first);

    const update = await admin.request('PUT', `/admin/v1/organisations/${organisationId}/webhook`, { url: `${receiver.baseUrl}/secret2`, format: 'slack' });
    expect(webhookPutResponse.parse(update.json)).toMatchObject({ signing_secret: null, webhook: { format: 'slack', secret_hint: `whsec_…${first.slice(-4)}` } });

    const rotate = await admin.request('PUT', `/admin/v1/organisations/${organisationId}/webhook`, { url: `${receiver.baseUrl}/secret2`, format: 'json', rotate_secret: true });
    const rotated = webhookPutResponse.parse(rotate.json).signing_secret!;
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(first);

    const { rows } = await db.query<{ action: string; changes: unknown }>(
      `SELECT action, changes FROM audit_events WHERE organisation_id = $1 AND resource_type = 'webhook' ORDER BY id`, [organisationId],
    );
    expect(rows.map((row) => row.action)).toEqual(['webhook.create', 'webhook.update', 'webhook.update']);
    const stored = await db.query<{ secret_sealed: string }>('SELECT secret_sealed FROM alert_webhooks WHERE organisation_id = $1', [organisationId]);
    for (const secret of [first, rotated]) {
      expect(JSON.stringify(rows)).not.toContain(secret);
      expect(stored.rows[0]!.secret_sealed).not.toContain(secret);
      expect(logs.text()).not.toContain(secret);
    }

    const removed = await admin.request('DELETE', `/admin/v1/organisations/${organisationId}/webhook`);
    expect(removed.status).toBe(200);
    expect(webhookGetResponse.parse((await admin.request('GET', `/admin/v1/organisations/${organisationId}/webhook`)).json).webhook).toBeNull();
    const test = await admin.request('POST', `/admin/v1/organisations/${organisationId}/webhook/test`);
    expect(errorResponse.parse(test.json).error.code).toBe('not_found');
  });

  it('refuses bad webhook bodies with the field named', async () => {
    const organisationId = await createOrganisation('Bad input');
    const cases: Array<[unknown, string]> = [
      [{ url: 'ftp://example.com/x' }, 'url'],
      [{ url: 'https://user:pw@example.com/x' }, 'url'],
      [{ url: `${receiver.baseUrl}/x`, format: 'xml' }, 'format'],
      [{ url: `${receiver.baseUrl}/x`, rotate_secret: 'yes' }, 'rotate_secret'],
      [{ format: 'json' }, 'url'],
    ];
    for (const [body, param] of cases) {
      const response = await admin.request('PUT', `/admin/v1/organisations/${organisationId}/webhook`, body);
      expect(response.status, response.text).toBe(400);
      expect(errorResponse.parse(response.json).error.param).toBe(param);
    }
    const settings = await admin.request('PUT', `/admin/v1/organisations/${organisationId}/alert-settings`, { low_balance_threshold_micros: 1.5 });
    expect(settings.status).toBe(400);
    expect(errorResponse.parse(settings.json).error.param).toBe('low_balance_threshold_micros');
  });
});

describePg('who may read and configure alerts', () => {
  /** A signed-in member's request: session cookie, and for changes the same Origin and the CSRF token. */
  async function asPerson(session: { token: string; csrfToken: string }, method: string, path: string, body?: unknown) {
    const response = await fetch(`${admin.baseUrl}${path}`, {
      method,
      headers: {
        cookie: `gw_session=${session.token}`,
        ...(method === 'GET' ? {} : { origin: admin.baseUrl, 'x-csrf-token': session.csrfToken }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, text: await response.text() };
  }

  async function member(organisationId: string, role: 'viewer' | 'developer' | 'owner') {
    const person = await insertPerson(db, { email: `${role}-${organisationId}@example.com`, platformAdmin: false });
    await insertMembership(db, { personId: person.id, organisationId, role, now: new Date() });
    return createSessions(db, { idleMs: 3_600_000, absoluteMs: 3_600_000 }).start(db, { personId: person.id, userAgent: 'test', clientAddress: '127.0.0.1' });
  }

  it('lets a viewer read alerts and settings but not the webhook (its URL may be a credential) nor configure them; an owner configures; other organisations do not exist', async () => {
    const organisationId = (await admin.request('POST', '/admin/v1/organisations', { name: 'Roles' })).json.id as string;
    const otherId = (await admin.request('POST', '/admin/v1/organisations', { name: 'Elsewhere' })).json.id as string;
    const viewer = await member(organisationId, 'viewer');
    const developer = await member(organisationId, 'developer');
    const owner = await member(organisationId, 'owner');
    const base = `/admin/v1/organisations/${organisationId}`;
    const webhookBody = { url: `${receiver.baseUrl}/roles`, format: 'json' };

    for (const path of ['/alerts', '/alert-settings']) {
      expect((await asPerson(viewer, 'GET', `${base}${path}`)).status).toBe(200);
    }
    expect((await asPerson(developer, 'GET', `${base}/webhook`)).status).toBe(403);
    expect((await asPerson(owner, 'GET', `${base}/webhook`)).status).toBe(200);
    expect((await asPerson(viewer, 'GET', `${base}/webhook/deliveries`)).status).toBe(403);
    expect((await asPerson(viewer, 'PUT', `${base}/webhook`, webhookBody)).status).toBe(403);
    expect((await asPerson(developer, 'PUT', `${base}/webhook`, webhookBody)).status).toBe(403);
    expect((await asPerson(viewer, 'PUT', `${base}/alert-settings`, { low_balance_threshold_micros: '5' })).status).toBe(403);
    expect((await asPerson(developer, 'POST', `${base}/webhook/test`)).status).toBe(403);

    const put = await asPerson(owner, 'PUT', `${base}/webhook`, webhookBody);
    expect(put.status, put.text).toBe(200);
    expect((await asPerson(owner, 'PUT', `${base}/alert-settings`, { low_balance_threshold_micros: '5000000' })).status).toBe(200);
    expect((await asPerson(owner, 'GET', `${base}/webhook/deliveries`)).status).toBe(200);
    expect((await asPerson(owner, 'POST', `${base}/webhook/test`)).status).toBe(202);
    // A change without the CSRF token is refused even for an owner.
    const noCsrf = await fetch(`${admin.baseUrl}${base}/alert-settings`, {
      method: 'PUT', headers: { cookie: `gw_session=${owner.token}`, origin: admin.baseUrl, 'content-type': 'application/json' },
      body: JSON.stringify({ low_balance_threshold_micros: null }),
    });
    expect(noCsrf.status).toBe(403);

    expect((await asPerson(owner, 'GET', `/admin/v1/organisations/${otherId}/alerts`)).status).toBe(404);
    expect((await asPerson(owner, 'PUT', `/admin/v1/organisations/${otherId}/webhook`, webhookBody)).status).toBe(404);
  });

  it('treats an organisation token as an owner of its own organisation only', async () => {
    const organisationId = (await admin.request('POST', '/admin/v1/organisations', { name: 'Automation' })).json.id as string;
    const otherId = (await admin.request('POST', '/admin/v1/organisations', { name: 'Not theirs' })).json.id as string;
    const issued = await admin.request('POST', `/admin/v1/organisations/${organisationId}/tokens`, { name: 'ci' });
    expect(issued.status, issued.text).toBe(201);
    const authorization = `Bearer ${issued.json.secret as string}`;
    const own = await admin.request('PUT', `/admin/v1/organisations/${organisationId}/alert-settings`, { low_balance_threshold_micros: '1000' }, { authorization });
    expect(own.status, own.text).toBe(200);
    expect(own.json).toEqual({ low_balance_threshold_micros: '1000' });
    expect((await admin.request('GET', `/admin/v1/organisations/${otherId}/alerts`, undefined, { authorization })).status).toBe(404);
  });
});

describe('webhook URL policy without private receivers', () => {
  it('refuses http, internal literals and names resolving inside when ADMIN_ALLOW_PRIVATE_UPSTREAMS is off', async () => {
    // PGlite in a fresh data folder: the default one may hold another admin's tokens.
    const dataDir = mkdtempSync(join(tmpdir(), 'alerts-strict-'));
    const resolveHost = async (host: string) => [{ address: host === 'inside.example' ? '10.0.0.5' : '93.184.215.14', family: 4 as const }];
    const strict = await startAdminHarness({ env: { DATA_DIR: dataDir }, resolveHost });
    try {
      const organisationId = (await strict.request('POST', '/admin/v1/organisations', { name: 'Strict' })).json.id as string;
      for (const url of ['http://hooks.example.com/x', 'https://127.0.0.1/x', 'https://localhost/x', 'https://[::1]/x', 'https://169.254.169.254/latest', 'https://inside.example/x']) {
        const response = await strict.request('PUT', `/admin/v1/organisations/${organisationId}/webhook`, { url });
        expect(response.status, url).toBe(400);
        expect(errorResponse.parse(response.json).error.param).toBe('url');
        expect(response.text).not.toContain('10.0.0.5');
      }
      const accepted = await strict.request('PUT', `/admin/v1/organisations/${organisationId}/webhook`, { url: 'https://outside.example/x' });
      expect(accepted.status, accepted.text).toBe(200);
    } finally {
      await strict.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
