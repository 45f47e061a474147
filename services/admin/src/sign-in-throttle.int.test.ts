/**
 * Sign-in throttling over HTTP on PostgreSQL: 5 failures per email and 30 per client address in
 * 15 minutes answer 429 with Retry-After, the same for unknown emails (no enumeration), a
 * success clears the email's failures, and X-Forwarded-For does not move a client without
 * ADMIN_TRUST_PROXY.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openDatabase, type Database } from '@gateway/db';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { signInLimits } from './people/domain/sign-in-throttle.ts';
import { startAdminHarness, type AdminHarness, type HarnessResponse } from './test-support/admin-harness.ts';
import { createOrganisation, newMember, signIn, testEmail } from './test-support/people-client.ts';

const serverUrl = testPostgresUrl();
const itPg = it.skipIf(!serverUrl);

let testDatabase: TestDatabase;
let admin: AdminHarness;
let db: Database;

beforeAll(async () => {
  if (!serverUrl) return;
  testDatabase = await createTestDatabase(serverUrl);
  admin = await startAdminHarness({ databaseUrl: testDatabase.url });
  db = await openDatabase({ url: testDatabase.url, schema: 'admin', poolSize: 2 });
});

afterAll(async () => {
  await db?.close();
  await admin?.close();
  await testDatabase?.drop();
});

function expectThrottled(response: HarnessResponse): void {
  expect(response.status, response.text).toBe(429);
  expect(response.json.error.code).toBe('rate_limit_exceeded');
  const retryAfter = Number(response.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(signInLimits.windowMs / 1000);
}

/** The answer's status and body with the Retry-After rounded away (it counts down between calls). */
function shapeOf(response: HarnessResponse) {
  return { status: response.status, code: response.json.error.code, hasRetryAfter: response.headers.has('retry-after') };
}

itPg('5 failures for an email throttle it, a known email and an unknown one alike, even with the right password', async () => {
  await db.query('DELETE FROM sign_in_failures');
  const organisationId = await createOrganisation(admin);
  const member = await newMember(admin, organisationId, 'viewer');
  const unknown = testEmail('nobody');
  const known: HarnessResponse[] = [];
  const unknownAnswers: HarnessResponse[] = [];
  for (let attempt = 0; attempt < signInLimits.perAccount; attempt += 1) {
    known.push(await signIn(admin, member.email, 'wrong-password-here'));
    unknownAnswers.push(await signIn(admin, unknown, 'wrong-password-here'));
  }
  for (const response of [...known, ...unknownAnswers]) expect(response.status).toBe(401);
  const knownThrottled = await signIn(admin, member.email, member.password);
  const unknownThrottled = await signIn(admin, unknown, 'wrong-password-here');
  expectThrottled(knownThrottled);
  expectThrottled(unknownThrottled);
  expect(shapeOf(unknownThrottled)).toEqual(shapeOf(knownThrottled));
  expect(unknownThrottled.json).toEqual(knownThrottled.json);
  // Another email from the same address is not throttled.
  const other = await newMember(admin, organisationId, 'viewer');
  expect((await signIn(admin, other.email, other.password)).status).toBe(200);
  // Once the failures leave the window, the email may try again.
  await db.query("UPDATE sign_in_failures SET occurred_at = occurred_at - interval '15 minutes'");
  expect((await signIn(admin, member.email, member.password)).status).toBe(200);
});

itPg('a success clears the email\'s failures', async () => {
  await db.query('DELETE FROM sign_in_failures');
  const organisationId = await createOrganisation(admin);
  const member = await newMember(admin, organisationId, 'viewer');
  for (let attempt = 0; attempt < signInLimits.perAccount - 1; attempt += 1) {
    expect((await signIn(admin, member.email, 'wrong-password-here')).status).toBe(401);
  }
  expect((await signIn(admin, member.email, member.password)).status).toBe(200);
  for (let attempt = 0; attempt < signInLimits.perAccount - 1; attempt += 1) {
    expect((await signIn(admin, member.email, 'wrong-password-here')).status).toBe(401);
  }
  expect((await signIn(admin, member.email, member.password)).status).toBe(200);
});

itPg('30 failures from one address throttle every email from it; X-Forwarded-For is not trusted without ADMIN_TRUST_PROXY', async () => {
  await db.query('DELETE FROM sign_in_failures');
  const organisationId = await createOrganisation(admin);
  const member = await newMember(admin, organisationId, 'viewer');
  for (let attempt = 0; attempt < signInLimits.perAddress; attempt += 1) {
    const response = await signIn(admin, testEmail('spray'), 'wrong-password-here', { 'x-forwarded-for': `203.0.113.${attempt}` });
    expect(response.status, `attempt ${attempt}`).toBe(401);
  }
  expectThrottled(await signIn(admin, testEmail('fresh'), 'wrong-password-here', { 'x-forwarded-for': '198.51.100.7' }));
  expectThrottled(await signIn(admin, member.email, member.password));
  // Old failures are pruned as new ones come in.
  await db.query("UPDATE sign_in_failures SET occurred_at = occurred_at - interval '16 minutes'");
  expect((await signIn(admin, testEmail('later'), 'wrong-password-here')).status).toBe(401);
  const { rows } = await db.query<{ count: bigint }>('SELECT count(*)::bigint AS count FROM sign_in_failures');
  expect(rows[0]!.count).toBe(1n);
  expect((await signIn(admin, member.email, member.password)).status).toBe(200);
});
