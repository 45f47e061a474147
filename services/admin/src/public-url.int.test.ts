/**
 * ADMIN_PUBLIC_URL decides what people's browsers see, whatever Host reaches the pod (behind an
 * ingress: the ingress's name, a pod IP from a probe or port-forward, or anything a client
 * sends): invitation links start with it, and an https one makes the session and device cookies
 * Secure with the `__Host-` prefix. The same requests to an admin without it show the mistake
 * these checks are for (links under the sent Host, cookies without Secure).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseSetCookie } from 'cookie';
import { openDatabase } from '@gateway/db';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { startAdminHarness, type AdminHarness } from './test-support/admin-harness.ts';
import { createOrganisation, newMember, requestWithHost, signIn, testEmail } from './test-support/people-client.ts';

const serverUrl = testPostgresUrl();
const itPg = it.skipIf(!serverUrl);
const publicUrl = 'https://dashboard.example.test';

let testDatabase: TestDatabase;
let published: AdminHarness;
let unpublished: AdminHarness;
/** Trusts proxies at 10.0.0.0/8 only: the test's loopback connection is not one of them. */
let trustsOthers: AdminHarness;
/** Trusts proxies on loopback, where the test connects from. */
let trustsLoopback: AdminHarness;

beforeAll(async () => {
  if (!serverUrl) return;
  testDatabase = await createTestDatabase(serverUrl);
  published = await startAdminHarness({ databaseUrl: testDatabase.url, env: { ADMIN_PUBLIC_URL: publicUrl } });
  unpublished = await startAdminHarness({
    databaseUrl: testDatabase.url, ledger: published.ledger, token: published.token, encryptionKey: published.encryptionKey,
  });
  const shared = { databaseUrl: testDatabase.url, ledger: published.ledger, token: published.token, encryptionKey: published.encryptionKey };
  trustsOthers = await startAdminHarness({ ...shared, env: { ADMIN_TRUST_PROXY: '10.0.0.0/8, fd00::/8' } });
  trustsLoopback = await startAdminHarness({ ...shared, env: { ADMIN_TRUST_PROXY: '127.0.0.0/8,::1' } });
});

afterAll(async () => {
  await trustsLoopback?.close();
  await trustsOthers?.close();
  await unpublished?.close();
  await published?.close();
  await testDatabase?.drop();
});

/** Hosts a request may arrive with: a pod IP and port, the ingress's name spoofed, an attacker's name. */
const sentHosts = ['10.244.1.7:8081', 'admin.inr-gateway.svc:8081', 'evil.example'];

itPg('an invitation link starts with ADMIN_PUBLIC_URL whatever Host the issuing request sent', async () => {
  const organisationId = await createOrganisation(published);
  for (const host of sentHosts) {
    const headers = { host, authorization: `Bearer ${published.token}` };
    const path = `/admin/v1/organisations/${organisationId}/invitations`;
    const issued = await requestWithHost(published.baseUrl, 'POST', path, { email: testEmail('invitee'), role: 'viewer' }, headers);
    expect(issued.status, issued.text).toBe(201);
    expect(issued.json.link).toMatch(new RegExp(`^${publicUrl.replaceAll('.', '\\.')}/#/link/[A-Za-z0-9_-]+$`));
    const unset = await requestWithHost(unpublished.baseUrl, 'POST', path, { email: testEmail('invitee'), role: 'viewer' }, headers);
    expect(unset.json.link, 'without ADMIN_PUBLIC_URL the link follows the Host sent').toMatch(new RegExp(`^http://${host}/#/link/`));
  }
});

itPg('with an https ADMIN_PUBLIC_URL the session and device cookies are Secure and __Host- over plain http, whatever Host was sent', async () => {
  const member = await newMember(published, await createOrganisation(published), 'viewer');
  for (const host of sentHosts) {
    const response = await signIn(published, member.email, member.password, { host });
    expect(response.status, response.text).toBe(200);
    const cookies = response.headers.getSetCookie().map((line) => parseSetCookie(line));
    expect(cookies.map((cookie) => [cookie.name, cookie.secure, cookie.path, cookie.httpOnly])).toEqual([
      ['__Host-gw_session', true, '/', true],
      ['__Host-gw_device', true, '/', true],
    ]);
    expect(cookies.every((cookie) => cookie.domain === undefined)).toBe(true);
    const unset = await signIn(unpublished, member.email, member.password, { host });
    expect(unset.headers.getSetCookie().map((line) => parseSetCookie(line).name), 'without it: the plain names').toEqual(['gw_session', 'gw_device']);
  }
});

itPg('ADMIN_TRUST_PROXY as a CIDR list believes X-Forwarded-* only from a listed proxy', async () => {
  const member = await newMember(published, await createOrganisation(published), 'viewer');
  const forwarded = { host: 'dashboard.example.com', 'x-forwarded-proto': 'https', 'x-forwarded-for': '198.51.100.9' };
  const cookieName = async (admin: AdminHarness) => parseSetCookie((await signIn(admin, member.email, member.password, forwarded)).headers.getSetCookie()[0]!).name;
  expect(await cookieName(trustsLoopback)).toBe('__Host-gw_session');
  expect(await cookieName(trustsOthers)).toBe('gw_session');
  // The client address sign-in throttling counts: the forwarded one only from a listed proxy.
  const db = await openDatabase({ url: testDatabase.url, schema: 'admin', poolSize: 1 });
  try {
    const { rows } = await db.query<{ client_address: string }>('SELECT client_address FROM sessions WHERE person_id = $1', [member.personId]);
    expect(rows.filter((row) => row.client_address === '198.51.100.9')).toHaveLength(1);
    expect(rows).toHaveLength(3);
  } finally {
    await db.close();
  }
});
