import { randomBytes } from 'node:crypto';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { openDatabase, type Database } from '@gateway/db';
import { createTestDatabase, sharedTestPki, testPostgresUrl, testTransportSecurity, type TestDatabase, type TestPki } from '@gateway/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdminHarness, type AdminHarness } from './test-support/admin-harness.ts';
import { connectFakeProxy, type FakeProxy } from './test-support/fake-proxy.ts';

const serverUrl = testPostgresUrl();
const upstreamCredential = `sk-vendor-${randomBytes(8).toString('hex')}`;

/**
 * Service identity of the config stream: the snapshot carries every
 * upstream credential decrypted, so only a proxy's certificate may open it. A made-up proxy
 * (no TLS, a certificate of another CA, no identity, the admin's own identity) gets no update.
 */
describe('config stream service identity (mTLS, proxy only)', () => {
  let admin: AdminHarness;
  let pki: TestPki;
  let testDatabase: TestDatabase | undefined;
  let database: Database | undefined;
  const proxies: FakeProxy[] = [];

  beforeAll(async () => {
    pki = await sharedTestPki();
    if (serverUrl) testDatabase = await createTestDatabase(serverUrl);
    else database = await openDatabase({ schema: 'admin' });
    admin = await startAdminHarness({
      ...(testDatabase ? { databaseUrl: testDatabase.url } : { database }),
      env: { ADMIN_ALLOW_PRIVATE_UPSTREAMS: 'true', SNAPSHOT_ACK_TIMEOUT_MS: '300' },
    });
    const model = await admin.request('POST', '/admin/v1/gateway-models', {
      slug: 'identity-model', display_name: 'Identity', default_max_tokens: 32, max_context_tokens: 2048,
      input_price_micros_per_mtok: '1000000', output_price_micros_per_mtok: '1000000',
      upstream: { provider_kind: 'openai_compatible', base_url: 'http://127.0.0.1:9/v1', model: 'vendor-m', api_key: upstreamCredential },
    });
    expect(model.status, model.text).toBe(201);
  }, 60_000);

  afterAll(async () => {
    for (const proxy of proxies) proxy.close();
    await admin?.close();
    await admin?.ledger.close();
    await database?.close();
    await testDatabase?.drop();
  });

  /** Opens the stream as `who` and resolves with how it ended and what it received. */
  async function impostor(who: Parameters<typeof connectFakeProxy>[2]['security']) {
    const proxy = connectFakeProxy(admin.grpcTarget, 'made-up-proxy', { autoAck: true, security: who });
    proxies.push(proxy);
    const { code } = await proxy.ended;
    return { code, updates: proxy.updates };
  }

  it('gives a plaintext client no snapshot', async () => {
    const { code, updates } = await impostor({ mode: 'insecure' });
    expect(code).toBe(GrpcStatus.UNAVAILABLE);
    expect(updates).toEqual([]);
  });

  it('gives a client with a certificate of another CA (claiming the proxy identity) no snapshot', async () => {
    const { code, updates } = await impostor(testTransportSecurity(pki, 'stranger'));
    expect(code).toBe(GrpcStatus.UNAVAILABLE);
    expect(updates).toEqual([]);
  });

  it('answers UNAUTHENTICATED, with no snapshot, to a certificate of the right CA without identity', async () => {
    const { code, updates } = await impostor(testTransportSecurity(pki, 'nobody'));
    expect(code).toBe(GrpcStatus.UNAUTHENTICATED);
    expect(updates).toEqual([]);
  });

  it('answers PERMISSION_DENIED, with no snapshot, to the admin or ledger identity', async () => {
    for (const role of ['admin', 'ledger'] as const) {
      const { code, updates } = await impostor(testTransportSecurity(pki, role));
      expect(code).toBe(GrpcStatus.PERMISSION_DENIED);
      expect(updates).toEqual([]);
    }
  });

  it('sends the proxy identity its snapshot, credential included', async () => {
    const proxy = connectFakeProxy(admin.grpcTarget, 'real-proxy', { autoAck: true, security: testTransportSecurity(pki, 'proxy') });
    proxies.push(proxy);
    const snapshot = await proxy.next((update) => update.full, 10_000);
    expect(JSON.stringify(snapshot, (_key, value: unknown) => (typeof value === 'bigint' ? String(value) : value))).toContain(upstreamCredential);
  });
});
