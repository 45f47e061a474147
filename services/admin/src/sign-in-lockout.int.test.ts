/**
 * Other people's failures never lock out a person who presents the right password from a browser
 * that signed in before (docs/people.md, "Sign-in throttling"), over HTTP on PostgreSQL. Every
 * client here shares one address, as behind an ingress without ADMIN_TRUST_PROXY: (a) the issue's
 * repro, 31 failures with other emails then the owner, passes; (b) the 31st guess across many
 * accounts from one address without a trusted device is still refused; (c) failing against a
 * person's email locks out unknown browsers, not theirs; a trusted device's own guesses are
 * limited, and a new password forgets the devices trusted for the old one.
 */
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { openDatabase, type Database } from '@gateway/db';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { signInLimits } from './people/domain/sign-in-throttle.ts';
import { startAdminHarness, type AdminHarness, type HarnessResponse } from './test-support/admin-harness.ts';
import { createOrganisation, deviceCookieOf, followLink, linkTokenOf, newMember, signIn, testEmail, testPassword } from './test-support/people-client.ts';

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

beforeEach(async () => {
  if (serverUrl) await db.query('DELETE FROM sign_in_failures');
});

/** An owner who signed in once from "their browser": the person and that browser's device cookie. */
async function ownerWithTrustedBrowser(): Promise<{ email: string; password: string; personId: string; device: string }> {
  const owner = await newMember(admin, await createOrganisation(admin), 'owner');
  const first = await signIn(admin, owner.email, owner.password);
  expect(first.status, first.text).toBe(200);
  const device = deviceCookieOf(first);
  expect(device).toMatch(/^__Host-gw_device=[A-Za-z0-9_-]{43}$/);
  return { email: owner.email, password: owner.password, personId: owner.personId, device: device! };
}

/** `count` failed sign-ins, each with a fresh email, from the one shared address; their statuses. */
async function spray(count: number, headers: Record<string, string> = {}): Promise<number[]> {
  const statuses: number[] = [];
  for (let attempt = 0; attempt < count; attempt += 1) statuses.push((await signIn(admin, testEmail('spray'), 'wrong-password-here', headers)).status);
  return statuses;
}

function expectThrottled(response: HarnessResponse): void {
  expect(response.status, response.text).toBe(429);
  expect(response.json.error.code).toBe('rate_limit_exceeded');
}

itPg('(a) the repro: 31 failed sign-ins with other emails from the same address, then the owner with the right password signs in from their browser', async () => {
  const owner = await ownerWithTrustedBrowser();
  const statuses = await spray(signInLimits.perAddress + 1);
  expect(statuses.slice(0, signInLimits.perAddress).every((status) => status === 401)).toBe(true);
  expect(statuses.at(-1)).toBe(429);
  const signedIn = await signIn(admin, owner.email, owner.password, { cookie: owner.device });
  expect(signedIn.status, signedIn.text).toBe(200);
  // The device token is re-issued (the old one replaced), and the new one works the same way.
  const renewed = deviceCookieOf(signedIn)!;
  expect(renewed).not.toBe(owner.device);
  expect((await signIn(admin, owner.email, owner.password, { cookie: renewed })).status).toBe(200);
  expectThrottled(await signIn(admin, owner.email, owner.password, { cookie: owner.device }));
  // A browser that never signed in as the owner is indistinguishable from the sprayer: refused.
  expectThrottled(await signIn(admin, owner.email, owner.password));
});

itPg('(b) the 31st guess across many accounts from one address is refused without a device trusted for that email', async () => {
  const attacker = await ownerWithTrustedBrowser();
  const victim = await ownerWithTrustedBrowser();
  expect(await spray(signInLimits.perAddress)).toEqual(new Array(signInLimits.perAddress).fill(401));
  expectThrottled(await signIn(admin, testEmail('next'), 'wrong-password-here'));
  // A device trusted for the attacker's own email buys nothing against another email.
  expectThrottled(await signIn(admin, testEmail('next'), 'wrong-password-here', { cookie: attacker.device }));
  expectThrottled(await signIn(admin, victim.email, 'a-guess-at-the-password', { cookie: attacker.device }));
  // ...while it still opens the attacker's own account (their failures are other emails').
  expect((await signIn(admin, attacker.email, attacker.password, { cookie: attacker.device })).status).toBe(200);
});

itPg('(c) failing against a person\'s email locks out unknown browsers only: the person\'s trusted browser signs in, and that does not reset the guesser', async () => {
  const owner = await ownerWithTrustedBrowser();
  for (let attempt = 0; attempt < signInLimits.perAccount; attempt += 1) {
    expect((await signIn(admin, owner.email, 'a-guess-at-the-password')).status).toBe(401);
  }
  expectThrottled(await signIn(admin, owner.email, owner.password));
  expect((await signIn(admin, owner.email, owner.password, { cookie: owner.device })).status).toBe(200);
  // The owner's success cleared their device's failures only: the guesser is still refused.
  expectThrottled(await signIn(admin, owner.email, 'a-guess-at-the-password'));
});

itPg('a trusted device\'s own wrong passwords are limited: after 5 it is an unknown browser again', async () => {
  const owner = await ownerWithTrustedBrowser();
  for (let attempt = 0; attempt < signInLimits.perTrustedDevice; attempt += 1) {
    expect((await signIn(admin, owner.email, 'a-guess-at-the-password', { cookie: owner.device })).status).toBe(401);
  }
  // Its failures were its own: an unknown browser is not yet refused for them...
  const { rows } = await db.query<{ untrusted: bigint }>('SELECT count(*) FILTER (WHERE device_id_hash IS NULL)::bigint AS untrusted FROM sign_in_failures');
  expect(rows[0]!.untrusted).toBe(0n);
  // ...and the device now counts as one: 5 more failures lock the email for it too.
  for (let attempt = 0; attempt < signInLimits.perAccount; attempt += 1) {
    expect((await signIn(admin, owner.email, 'a-guess-at-the-password', { cookie: owner.device })).status).toBe(401);
  }
  expectThrottled(await signIn(admin, owner.email, owner.password, { cookie: owner.device }));
  expectThrottled(await signIn(admin, owner.email, owner.password));
});

itPg('a new password (a reset link) forgets the browsers trusted for the old one; the browser that set it is trusted', async () => {
  const owner = await ownerWithTrustedBrowser();
  const reset = await admin.request('POST', `/admin/v1/people/${owner.personId}/password-resets`);
  expect(reset.status, reset.text).toBe(201);
  const newPassword = testPassword('new');
  const followed = await followLink(admin, linkTokenOf(reset.json.link as string), newPassword);
  expect(followed.status, followed.text).toBe(200);
  const resetBrowser = deviceCookieOf(followed)!;
  for (let attempt = 0; attempt < signInLimits.perAccount; attempt += 1) {
    expect((await signIn(admin, owner.email, 'a-guess-at-the-password')).status).toBe(401);
  }
  expectThrottled(await signIn(admin, owner.email, newPassword, { cookie: owner.device }));
  expect((await signIn(admin, owner.email, newPassword, { cookie: resetBrowser })).status).toBe(200);
});

itPg('one browser stays trusted for several emails: the device cookie carries a token per email', async () => {
  const first = await ownerWithTrustedBrowser();
  const second = await newMember(admin, await createOrganisation(admin), 'owner');
  const both = deviceCookieOf(await signIn(admin, second.email, second.password, { cookie: first.device }))!;
  expect(both.split('=')[1]!.split('.')).toHaveLength(2);
  await spray(signInLimits.perAddress);
  expect((await signIn(admin, first.email, first.password, { cookie: both })).status).toBe(200);
  expect((await signIn(admin, second.email, second.password, { cookie: both })).status).toBe(200);
});
