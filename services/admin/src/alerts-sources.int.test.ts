/**
 * Where alerts come from, over real PostgreSQL, the fake ledger over real grpc-js, a real local
 * HTTP receiver and a real local SMTP server: the ledger's soft budget alerts become one alert
 * each, delivered once even across an admin restart (the cursor lives in the database), and the
 * low-balance alert fires once per crossing, re-arms above the threshold, and fires for a new
 * threshold the balance is already below. Alerts are also emailed to the organisation's owners.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SMTPServer } from 'smtp-server';
import { WebSocket } from 'ws';
import { openDatabase, type Database } from '@gateway/db';
import { issueSecret } from '@gateway/secrets';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { insertMembership, insertPerson } from './people/domain/people-store.ts';
import { alertListResponse } from './alerts/http/alert-schemas.ts';
import { startAdminHarness, type AdminHarness } from './test-support/admin-harness.ts';
import { startAlertReceiver, type AlertReceiver } from './test-support/alert-receiver.ts';
import { startFakeLedger, type FakeLedger } from './test-support/fake-ledger.ts';

const serverUrl = testPostgresUrl();
const describePg = describe.skipIf(!serverUrl);

/** One email the SMTP server accepted. */
interface ReceivedMail {
  to: string[];
  raw: string;
}

let testDatabase: TestDatabase;
let ledger: FakeLedger;
let receiver: AlertReceiver;
let smtp: SMTPServer;
const mails: ReceivedMail[] = [];
let smtpPort: number;
let db: Database;
let admin: AdminHarness;
const token = issueSecret('adminToken').secret;
const encryptionKey = Buffer.alloc(32, 7).toString('base64');

/** Starts an admin on the shared database and fake ledger (again after a restart). */
function startAdmin(): Promise<AdminHarness> {
  return startAdminHarness({
    databaseUrl: testDatabase.url, ledger, token, encryptionKey,
    env: {
      ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'true', ALERT_POLL_MS: '20', ALERT_RETRY_BASE_MS: '100', LOW_BALANCE_POLL_MS: '30',
      SMTP_URL: `smtp://127.0.0.1:${smtpPort}`, SMTP_FROM: 'alerts@gateway.example',
    },
  });
}

beforeAll(async () => {
  if (!serverUrl) return;
  testDatabase = await createTestDatabase(serverUrl);
  ledger = await startFakeLedger();
  receiver = await startAlertReceiver();
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        mails.push({ to: session.envelope.rcptTo.map((recipient) => recipient.address), raw: Buffer.concat(chunks).toString('utf8') });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  smtpPort = (smtp.server.address() as AddressInfo).port;
  admin = await startAdmin();
  db = await openDatabase({ url: testDatabase.url, schema: 'admin', poolSize: 2 });
});

afterAll(async () => {
  await db?.close();
  await admin?.close();
  await new Promise<void>((resolve) => (smtp ? smtp.close(() => resolve()) : resolve()));
  await receiver?.close();
  await ledger?.close();
  await testDatabase?.drop();
});

async function createOrganisation(name: string, webhookPath: string): Promise<string> {
  const created = await admin.request('POST', '/admin/v1/organisations', { name });
  expect(created.status, created.text).toBe(201);
  const organisationId = created.json.id as string;
  const webhook = await admin.request('PUT', `/admin/v1/organisations/${organisationId}/webhook`, { url: `${receiver.baseUrl}${webhookPath}` });
  expect(webhook.status, webhook.text).toBe(200);
  return organisationId;
}

async function alertsOf(organisationId: string) {
  const response = await admin.request('GET', `/admin/v1/organisations/${organisationId}/alerts?limit=100`);
  expect(response.status, response.text).toBe(200);
  return alertListResponse.parse(response.json).data;
}

/** Alert ids the receiver got at a path, each with how many requests carried it. */
function receivedAlertIds(path: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const request of receiver.requestsTo(path)) {
    const id = request.headers['x-gateway-alert-id'] as string;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/** Waits until the fake ledger has answered `count` more balance reads: complete low-balance passes, not time. */
async function balanceReads(count: number): Promise<void> {
  const reads = () => ledger.calls.filter((call) => call === 'getBalance').length;
  const target = reads() + count;
  await vi.waitFor(() => expect(reads()).toBeGreaterThanOrEqual(target), { timeout: 10_000, interval: 10 });
}

const waitLong = { timeout: 15_000, interval: 25 };

describePg('alerts from the ledger and the balance', () => {
  it('turns each ledger budget alert into one alert, delivered once even across an admin restart', async () => {
    const organisationId = await createOrganisation('Budgeted', '/budget');
    const project = await admin.request('POST', `/admin/v1/organisations/${organisationId}/projects`, { name: 'chatbot' });
    expect(project.status, project.text).toBe(201);
    const projectId = project.json.project.id as string;
    const owner = await insertPerson(db, { email: 'owner-budget@example.com', platformAdmin: false });
    await insertMembership(db, { personId: owner.id, organisationId, role: 'owner', now: new Date() });

    const ledgerAlert = (id: string, organisation = organisationId) => ({
      id, organisationId: organisation, projectId, month: '2026-11', spentMicros: 8_000_000_000n, monthlyCapMicros: 10_000_000_000n,
      softAlertPercent: 80, raisedAtMs: BigInt(Date.parse('2026-11-21T09:15:02Z')),
    });
    ledger.budgetAlerts.push(ledgerAlert('1'));

    const [first] = await vi.waitFor(async () => {
      const alerts = await alertsOf(organisationId);
      expect(alerts).toHaveLength(1);
      return alerts;
    }, waitLong);
    expect(first).toMatchObject({
      kind: 'budget_soft', organisation_id: organisationId, project_id: projectId, occurred_at: '2026-11-21T09:15:02.000Z',
      message: 'Project "chatbot" has spent ₹8,000.00 of its ₹10,000.00 monthly budget for 2026-11 (soft alert at 80%).',
      details: { ledger_alert_id: '1', project_name: 'chatbot', month: '2026-11', spent_micros: '8000000000', monthly_cap_micros: '10000000000', soft_alert_percent: 80 },
    });
    await vi.waitFor(() => expect(receivedAlertIds('/budget')).toEqual(new Map([[first!.id, 1]])), waitLong);
    const envelope = JSON.parse(receiver.requestsTo('/budget')[0]!.body);
    expect(envelope).toEqual({
      id: first!.id, type: 'budget_soft', created_at: '2026-11-21T09:15:02.000Z', organisation_id: organisationId,
      data: { project_id: projectId, message: first!.message, ...first!.details },
    });
    await vi.waitFor(() => expect(mails.filter((mail) => mail.raw.includes(first!.id))).toHaveLength(1), waitLong);
    const mail = mails.find((entry) => entry.raw.includes(first!.id))!;
    expect(mail.to).toEqual(['owner-budget@example.com']);
    expect(mail.raw).toContain('Subject: [Gateway] Project budget alert');

    await admin.close();
    admin = await startAdmin();
    // An alert of an organisation the admin does not know is skipped (the cursor moves past it).
    ledger.budgetAlerts.push(ledgerAlert('2', 'org_000000000000000000000000'), ledgerAlert('3'));

    const alerts = await vi.waitFor(async () => {
      const listed = await alertsOf(organisationId);
      expect(listed).toHaveLength(2);
      return listed;
    }, waitLong);
    expect(alerts.map((alert) => alert.details.ledger_alert_id)).toEqual(['3', '1']);
    await vi.waitFor(() => expect(receivedAlertIds('/budget').size).toBe(2), waitLong);
    // The restarted admin delivered the new alert and did not deliver the first one again.
    expect(receivedAlertIds('/budget')).toEqual(new Map([[alerts[1]!.id, 1], [alerts[0]!.id, 1]]));
    const { rows } = await db.query<{ position: string }>(`SELECT position FROM alert_cursors WHERE name = 'ledger_budget_alerts'`);
    expect(rows[0]!.position).toBe('3');
  });

  it('raises one low-balance alert per crossing, re-arms at or above the threshold, and fires for a new threshold already crossed', async () => {
    const organisationId = await createOrganisation('Low funds', '/low');
    const account = ledger.accounts.get(organisationId)!;
    account.availableMicros = 1_000_000_000n;
    // The dashboard's live connection is told of each alert as it is raised.
    const liveAlerts: Array<{ id: string; kind: string }> = [];
    const live = new WebSocket(`${admin.baseUrl.replace('http:', 'ws:')}/admin/v1/live?organisation_id=${organisationId}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    live.on('message', (data) => {
      const message = JSON.parse(String(data)) as { type: string; alert?: { id: string; kind: string } };
      if (message.type === 'alert') liveAlerts.push(message.alert!);
    });
    await new Promise<void>((resolve, reject) => {
      live.once('open', () => resolve());
      live.once('error', reject);
    });
    const settings = await admin.request('PUT', `/admin/v1/organisations/${organisationId}/alert-settings`, { low_balance_threshold_micros: '500000000' });
    expect(settings.status, settings.text).toBe(200);
    expect(settings.json).toEqual({ low_balance_threshold_micros: '500000000' });
    expect((await admin.request('GET', `/admin/v1/organisations/${organisationId}/alert-settings`)).json).toEqual({ low_balance_threshold_micros: '500000000' });

    await balanceReads(3);
    expect(await alertsOf(organisationId)).toHaveLength(0);

    account.availableMicros = 400_000_000n;
    const [crossed] = await vi.waitFor(async () => {
      const alerts = await alertsOf(organisationId);
      expect(alerts).toHaveLength(1);
      return alerts;
    }, waitLong);
    expect(crossed).toMatchObject({
      kind: 'low_balance', project_id: null,
      message: 'The available balance of "Low funds", ₹400.00, is below its low-balance threshold of ₹500.00.',
      details: { available_micros: '400000000', threshold_micros: '500000000' },
    });
    await balanceReads(3);
    expect(await alertsOf(organisationId)).toHaveLength(1);
    await vi.waitFor(() => expect(liveAlerts).toEqual([{ ...crossed }]), waitLong);

    // Back at the threshold re-arms it; the next fall below raises the second alert.
    account.availableMicros = 500_000_000n;
    await balanceReads(3);
    expect(await alertsOf(organisationId)).toHaveLength(1);
    account.availableMicros = 300_000_000n;
    await vi.waitFor(async () => expect(await alertsOf(organisationId)).toHaveLength(2), waitLong);

    // A new threshold above a balance that is already below it fires once at the next check.
    await admin.request('PUT', `/admin/v1/organisations/${organisationId}/alert-settings`, { low_balance_threshold_micros: '1000000000' });
    const alerts = await vi.waitFor(async () => {
      const listed = await alertsOf(organisationId);
      expect(listed).toHaveLength(3);
      return listed;
    }, waitLong);
    expect(alerts[0]!.details).toEqual({ available_micros: '300000000', threshold_micros: '1000000000' });
    await balanceReads(3);
    expect(await alertsOf(organisationId)).toHaveLength(3);
    await vi.waitFor(() => expect(liveAlerts.map((alert) => alert.id)).toEqual(alerts.map((alert) => alert.id).reverse()), waitLong);
    live.close();

    // Cleared: no more checks of this organisation's balance lead anywhere.
    expect((await admin.request('PUT', `/admin/v1/organisations/${organisationId}/alert-settings`, { low_balance_threshold_micros: null })).json)
      .toEqual({ low_balance_threshold_micros: null });

    await vi.waitFor(() => expect(receivedAlertIds('/low').size).toBe(3), waitLong);
    expect([...receivedAlertIds('/low').values()]).toEqual([1, 1, 1]);
    expect(receiver.requestsTo('/low').map((request) => JSON.parse(request.body).type)).toEqual(['low_balance', 'low_balance', 'low_balance']);
    // No owner: the email deliveries are logged as failed with no_recipients.
    const deliveries = await admin.request('GET', `/admin/v1/organisations/${organisationId}/webhook/deliveries`);
    const email = (deliveries.json.data as Array<{ channel: string; state: string; attempts: Array<{ error: string | null }> }>).filter((entry) => entry.channel === 'email');
    expect(email).toHaveLength(3);
    await vi.waitFor(async () => {
      const current = await admin.request('GET', `/admin/v1/organisations/${organisationId}/webhook/deliveries`);
      const states = (current.json.data as Array<{ channel: string; state: string; attempts: Array<{ error: string | null }> }>)
        .filter((entry) => entry.channel === 'email').map((entry) => [entry.state, entry.attempts.map((attempt) => attempt.error)]);
      expect(states).toEqual([['failed', ['no_recipients']], ['failed', ['no_recipients']], ['failed', ['no_recipients']]]);
    }, waitLong);
    // Nothing to send to is undeliverable, not a failing relay: GatewayAlertEmailFailing watches `failed` only.
    const emailAttempts = async (outcome: string) => (await admin.app.metrics.adminAlertDeliveries.get()).values
      .filter((value) => value.labels.channel === 'email' && value.labels.outcome === outcome).reduce((sum, value) => sum + value.value, 0);
    expect(await emailAttempts('undeliverable')).toBeGreaterThanOrEqual(3);
    expect(await emailAttempts('failed')).toBe(0);
  });
});
