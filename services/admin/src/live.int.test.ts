/**
 * The dashboard's live updates over a real WebSocket (the `ws` client): through the running
 * admin with a bearer token over real PostgreSQL and the fake ledger over grpc-js, and through
 * attachLiveUpdates on its own HTTP server for what a test must steer (a session that ends,
 * alerts, dead peers, shutdown). Every wait is for a message or a state, bounded only so a
 * failure does not hang.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { connect as connectTcp, type AddressInfo } from 'node:net';
import { WebSocket } from 'ws';
import { ledgerV1 } from '@gateway/contracts';
import { openDatabase, type Database } from '@gateway/db';
import { createLogger } from '@gateway/logger';
import { createTestDatabase, serviceTlsEnv, sharedTestPki, testPostgresUrl, testTransportSecurity, type TestDatabase } from '@gateway/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAdminConfig } from './config.ts';
import type { Actor, OrganisationRole } from './common/domain/actor.ts';
import { createLiveEvents } from './common/domain/live-events.ts';
import type { Authentication, RequestCredentials } from './common/http/admin-http-app.ts';
import { adminTokenCreatedResponse, organisationResponse } from './tenancy/http/tenancy-schemas.ts';
import { createGrpcLedger, type GrpcLedger } from './ledger/grpc-ledger.ts';
import { startAdminHarness, type AdminHarness } from './test-support/admin-harness.ts';
import { attachLiveUpdates } from './wiring/live.ts';

const serverUrl = testPostgresUrl();
/** The longest a test waits for one message or state before failing (never a timing assertion). */
const waitLimitMs = 10_000;

// Tests read arbitrary fields of the messages they assert on.
type Message = any;

/** A connected test client: every message received, in order, and a way to wait for one. */
interface TestClient {
  socket: WebSocket;
  messages: Message[];
  /** Resolves with the first message (received so far or later) that `matches`; fails after waitLimitMs. */
  next(matches: (message: Message) => boolean, what: string): Promise<Message>;
  /** Resolves with the close code and reason once the socket closes. */
  closed: Promise<{ code: number; reason: string }>;
}

/** Opens a WebSocket; rejects with the HTTP status and JSON body when the server refuses the upgrade. */
function openClient(url: string, headers: Record<string, string>): Promise<TestClient> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    const messages: Message[] = [];
    const waiters = new Set<() => void>();
    socket.on('message', (data) => {
      messages.push(JSON.parse(String(data)));
      for (const waiter of [...waiters]) waiter();
    });
    const closed = new Promise<{ code: number; reason: string }>((resolveClosed) => {
      socket.on('close', (code, reason) => resolveClosed({ code, reason: String(reason) }));
    });
    socket.on('unexpected-response', (_request, response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => { body += String(chunk); });
      response.on('end', () => reject(Object.assign(new Error(`refused with ${response.statusCode}`), { status: response.statusCode, body: JSON.parse(body || 'null') })));
    });
    socket.on('error', (error) => reject(error));
    socket.on('open', () => resolve({
      socket, messages, closed,
      next(matches, what) {
        return new Promise((resolveMessage, rejectMessage) => {
          const check = () => {
            const found = messages.find(matches);
            if (found === undefined) return;
            waiters.delete(check);
            clearTimeout(limit);
            resolveMessage(found);
          };
          const limit = setTimeout(() => {
            waiters.delete(check);
            rejectMessage(new Error(`no ${what} within ${waitLimitMs} ms; got ${JSON.stringify(messages)}`));
          }, waitLimitMs);
          waiters.add(check);
          check();
        });
      },
    }));
  });
}

/** Asserts that opening the WebSocket is refused with `status` and the catalogue `code`. */
async function expectRefused(url: string, headers: Record<string, string>, status: number, code: string): Promise<void> {
  const refusal = await openClient(url, headers).then(
    (client) => { client.socket.terminate(); throw new Error('the upgrade was accepted'); },
    (error: { status?: number; body?: { error?: { code?: string } } }) => error,
  );
  expect(refusal.status).toBe(status);
  expect(refusal.body?.error?.code).toBe(code);
}

describe.skipIf(!serverUrl)('live updates through the running admin (bearer tokens)', () => {
  let testDatabase: TestDatabase;
  let admin: AdminHarness | undefined;
  let liveUrl: string;

  beforeAll(async () => {
    testDatabase = await createTestDatabase(serverUrl!);
    admin = await startAdminHarness({ databaseUrl: testDatabase.url, env: { LIVE_POLL_MS: '50' } });
    liveUrl = `ws://127.0.0.1:${admin.app.ports.http}/admin/v1/live`;
  });
  afterAll(async () => {
    await admin?.close();
    await testDatabase?.drop();
  });

  async function createOrganisation(name: string) {
    const response = await admin!.request('POST', '/admin/v1/organisations', { name });
    expect(response.status, response.text).toBe(201);
    return organisationResponse.parse(response.json);
  }

  it('tells a platform token the balance and usage, then each change within a poll or so', async () => {
    const organisation = await createOrganisation('Live');
    const client = await openClient(`${liveUrl}?organisation_id=${organisation.id}`, { authorization: `Bearer ${admin!.token}` });
    try {
      await client.next((message) => message.type === 'balance' && message.balance.available_micros === '0', 'the first balance');
      await client.next((message) => message.type === 'usage' && message.records.length === 0, 'the first (empty) usage');

      const credit = await admin!.request('POST', `/admin/v1/organisations/${organisation.id}/credits`, { amount_micros: '2500000', reason: 'live test' }, { 'idempotency-key': 'live-credit-1' });
      expect(credit.status, credit.text).toBe(201);
      const balance = await client.next((message) => message.type === 'balance' && message.balance.available_micros === '2500000', 'the credited balance');
      expect(balance.balance).toMatchObject({ organisation_id: organisation.id, held_micros: '0', debited_micros: '0' });

      admin!.ledger.usage.push(ledgerV1.UsageRecord.fromPartial({
        id: 'live-usage-1', reservationId: 'res-live-1', organisationId: organisation.id, projectId: 'proj_000000000000000000000001', modelSlug: 'chat',
        inputTokens: 12n, outputTokens: 3n, costMicros: 1_234n, providerCostMicros: 600n, debitedMicros: 1_234n,
        billingMode: ledgerV1.BillingMode.BILLING_MODE_COMMERCIAL, usageSource: ledgerV1.UsageSource.USAGE_SOURCE_UPSTREAM,
        requestId: 'req-live-1', createdAtMs: BigInt(Date.now()),
      }));
      const usage = await client.next((message) => message.type === 'usage' && message.records[0]?.id === 'live-usage-1', 'the new usage record');
      expect(usage.records).toEqual([expect.objectContaining({ id: 'live-usage-1', model: 'chat', cost_micros: '1234', input_tokens: 12 })]);
    } finally {
      client.socket.terminate();
    }
  });

  it('refuses before upgrading: no credentials (401), another organisation\'s id (404), no organisation_id (400), another path (404)', async () => {
    const mine = await createOrganisation('Mine');
    const theirs = await createOrganisation('Theirs');
    const issued = await admin!.request('POST', `/admin/v1/organisations/${mine.id}/tokens`, { name: 'live' });
    expect(issued.status, issued.text).toBe(201);
    const organisationToken = adminTokenCreatedResponse.parse(issued.json).secret;

    await expectRefused(`${liveUrl}?organisation_id=${mine.id}`, {}, 401, 'unauthenticated');
    await expectRefused(`${liveUrl}?organisation_id=${mine.id}`, { authorization: 'Bearer gwadm_not-a-token' }, 401, 'unauthenticated');
    await expectRefused(`${liveUrl}?organisation_id=${theirs.id}`, { authorization: `Bearer ${organisationToken}` }, 404, 'not_found');
    await expectRefused(`${liveUrl}?organisation_id=org_000000000000000000000000`, { authorization: `Bearer ${admin!.token}` }, 404, 'not_found');
    await expectRefused(liveUrl, { authorization: `Bearer ${admin!.token}` }, 400, 'invalid_request');
    await expectRefused(`ws://127.0.0.1:${admin!.app.ports.http}/admin/v1/organisations`, { authorization: `Bearer ${admin!.token}` }, 404, 'not_found');

    // The organisation's own token is a member of it: admitted.
    const client = await openClient(`${liveUrl}?organisation_id=${mine.id}`, { authorization: `Bearer ${organisationToken}` });
    await client.next((message) => message.type === 'balance', 'the balance');
    // Revoking the token ends the connection at the next credentials check (every 30 s here: not waited for).
    client.socket.terminate();
  });

  it('ends every connection with 1001 when the admin closes', async () => {
    const organisation = await createOrganisation('Closing');
    const client = await openClient(`${liveUrl}?organisation_id=${organisation.id}`, { authorization: `Bearer ${admin!.token}` });
    await client.next((message) => message.type === 'balance', 'the balance');
    const closing = admin!.close();
    admin = undefined;
    expect((await client.closed).code).toBe(1001);
    await closing;
  });
});

describe.skipIf(!serverUrl)('attachLiveUpdates (sessions, alerts, dead peers, shutdown)', () => {
  let testDatabase: TestDatabase;
  let admin: AdminHarness;
  let db: Database;
  let ledger: GrpcLedger;
  let organisationId: string;

  beforeAll(async () => {
    testDatabase = await createTestDatabase(serverUrl!);
    admin = await startAdminHarness({ databaseUrl: testDatabase.url });
    const created = await admin.request('POST', '/admin/v1/organisations', { name: 'Watched' });
    organisationId = organisationResponse.parse(created.json).id;
    db = await openDatabase({ url: testDatabase.url, schema: 'admin', poolSize: 2 });
    ledger = createGrpcLedger({ target: admin.ledger.target, callTimeoutMs: 5_000, security: testTransportSecurity(await sharedTestPki(), 'admin') });
  });
  afterAll(async () => {
    ledger?.close();
    await db?.close();
    await admin?.close();
    await testDatabase?.drop();
  });

  /** A person signed in with the cookie "session=<id>", holding `role` in the watched organisation while `state.valid`. */
  function sessions(role: OrganisationRole | undefined) {
    const state = { valid: true, checks: 0 };
    const actor: Actor = {
      kind: 'person', personId: 'per_000000000000000000000001', sessionId: 'session-1', platformAdmin: false,
      roles: new Map(role === undefined ? [] : [[organisationId, role]]),
    };
    const authenticate = async (credentials: RequestCredentials): Promise<Authentication | undefined> => {
      state.checks++;
      if (!state.valid || credentials.cookieHeader !== 'session=good' || credentials.authorization !== undefined) return undefined;
      return { actor, via: 'session', csrfTokenValid: credentials.csrfToken !== undefined };
    };
    return { state, authenticate };
  }

  /** attachLiveUpdates on a fresh HTTP server on port 0. */
  async function startLive(authenticate: (credentials: RequestCredentials) => Promise<Authentication | undefined>, timing: { recheckMs?: number; pingMs?: number } = {}) {
    const pki = await sharedTestPki();
    const config = loadAdminConfig({
      ...serviceTlsEnv(pki, 'admin'), LEDGER_GRPC_URL: admin.ledger.target, ADMIN_ENCRYPTION_KEY: randomBytes(32).toString('base64'), LIVE_POLL_MS: '50',
    });
    const server: Server = createServer((_request, response) => { response.statusCode = 404; response.end(); });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const liveEvents = createLiveEvents();
    const live = attachLiveUpdates({ server, db, ledger, liveEvents, config, logger: createLogger('admin', 'silent'), authenticate, ...timing });
    const port = (server.address() as AddressInfo).port;
    return {
      live, liveEvents, port,
      url: `ws://127.0.0.1:${port}/admin/v1/live?organisation_id=${organisationId}`,
      async stop() {
        await live.close();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      },
    };
  }

  it('admits a session only from this host\'s Origin, tells it alerts as they are published, and closes it with 4401 once the session ends', async () => {
    const { state, authenticate } = sessions('viewer');
    const started = await startLive(authenticate, { recheckMs: 50 });
    try {
      const host = `127.0.0.1:${started.port}`;
      await expectRefused(started.url, { cookie: 'session=good' }, 403, 'permission_denied');
      await expectRefused(started.url, { cookie: 'session=good', origin: 'https://evil.example' }, 403, 'permission_denied');
      await expectRefused(started.url, { cookie: 'session=bad', origin: `http://${host}` }, 401, 'unauthenticated');

      const client = await openClient(started.url, { cookie: 'session=good', origin: `http://${host}` });
      await client.next((message) => message.type === 'balance', 'the balance');
      started.liveEvents.publish(organisationId, { type: 'alert', alert: { id: 'alrt_1', kind: 'low_balance' } });
      started.liveEvents.publish('org_000000000000000000000000', { type: 'alert', alert: { id: 'alrt_other' } });
      const alert = await client.next((message) => message.type === 'alert', 'the alert');
      expect(alert).toEqual({ type: 'alert', alert: { id: 'alrt_1', kind: 'low_balance' } });

      state.valid = false;
      expect(await client.closed).toEqual({ code: 4401, reason: 'credentials ended' });
      expect(client.messages.some((message) => message.alert?.id === 'alrt_other')).toBe(false);
    } finally {
      await started.stop();
    }
  });

  it('refuses a person without a role in the organisation (404)', async () => {
    const { authenticate } = sessions(undefined);
    const started = await startLive(authenticate);
    try {
      await expectRefused(started.url, { cookie: 'session=good', origin: `http://127.0.0.1:${started.port}` }, 404, 'not_found');
    } finally {
      await started.stop();
    }
  });

  it('ends a peer that stops answering pings', async () => {
    const { authenticate } = sessions('viewer');
    const started = await startLive(authenticate, { pingMs: 50 });
    try {
      // A raw TCP peer that completes the handshake and then never answers a ping.
      const socket = connectTcp(started.port, '127.0.0.1');
      const ended = new Promise<string>((resolve) => {
        let received = '';
        socket.on('data', (chunk) => { received += chunk.toString('latin1'); });
        socket.on('close', () => resolve(received));
      });
      socket.write([
        `GET /admin/v1/live?organisation_id=${organisationId} HTTP/1.1`, `Host: 127.0.0.1:${started.port}`, `Origin: http://127.0.0.1:${started.port}`,
        'Cookie: session=good', 'Upgrade: websocket', 'Connection: Upgrade', `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
        'Sec-WebSocket-Version: 13', '', '',
      ].join('\r\n'));
      expect(await ended).toMatch(/^HTTP\/1\.1 101 /);
    } finally {
      await started.stop();
    }
  });

  it('close() ends every socket with 1001 and answers new upgrades 503', async () => {
    const { authenticate } = sessions('developer');
    const started = await startLive(authenticate);
    const headers = { cookie: 'session=good', origin: `http://127.0.0.1:${started.port}` };
    const first = await openClient(started.url, headers);
    const second = await openClient(started.url, headers);
    await first.next((message) => message.type === 'usage', 'the usage');
    await second.next((message) => message.type === 'usage', 'the usage');
    await started.live.close();
    expect((await first.closed).code).toBe(1001);
    expect((await second.closed).code).toBe(1001);
    await expectRefused(started.url, headers, 503, 'service_unavailable');
    await new Promise<void>((resolve) => { started.stop().then(resolve, resolve); });
  });
});
