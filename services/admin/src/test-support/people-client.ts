import { request as httpRequest } from 'node:http';
import { parseSetCookie, type SetCookie } from 'cookie';
import { expect } from 'vitest';
import type { AdminHarness, HarnessResponse } from './admin-harness.ts';

/** A password long enough for the rules, distinct per call. */
export function testPassword(label = 'pw'): string {
  return `${label}-correct-horse-${Math.random().toString(36).slice(2, 10)}`;
}

/** A fresh email address. */
export function testEmail(label = 'person'): string {
  return `${label}-${Math.random().toString(36).slice(2, 10)}@example.test`;
}

/** Calls the admin without any credential (for /auth routes), with optional extra headers. */
export async function callAnonymously(
  admin: AdminHarness, method: string, path: string, body?: unknown, headers: Record<string, string> = {},
): Promise<HarnessResponse> {
  return admin.request(method, path, body, { authorization: '', ...headers });
}

/** The session cookie a response set (name, value and attributes), or undefined. */
export function sessionCookieOf(response: HarnessResponse): SetCookie | undefined {
  return response.headers.getSetCookie().map((line) => parseSetCookie(line)).find((cookie) => cookie.name.endsWith('gw_session') && cookie.value !== '');
}

/** A signed-in person's client: sends the session cookie, and X-CSRF-Token on state changes. */
export interface SessionClient {
  personId: string;
  cookie: string;
  csrfToken: string;
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<HarnessResponse>;
}

/** The client of the session a successful sign-in or link answer started. */
export function sessionClientOf(admin: AdminHarness, response: HarnessResponse): SessionClient {
  expect(response.status, response.text).toBe(200);
  const cookie = sessionCookieOf(response);
  expect(cookie).toBeDefined();
  const cookieHeader = `${cookie!.name}=${cookie!.value}`;
  const csrfToken = response.json.csrf_token as string;
  return {
    personId: response.json.person.id as string,
    cookie: cookieHeader,
    csrfToken,
    request(method, path, body, headers = {}) {
      const csrf: Record<string, string> = method === 'GET' ? {} : { 'x-csrf-token': csrfToken };
      return admin.request(method, path, body, { authorization: '', cookie: cookieHeader, ...csrf, ...headers });
    },
  };
}

/** The device cookie a sign-in answer set, as a Cookie header value (`name=value`), or undefined. */
export function deviceCookieOf(response: HarnessResponse): string | undefined {
  const cookie = response.headers.getSetCookie().map((line) => parseSetCookie(line)).find((candidate) => candidate.name.endsWith('gw_device'));
  return cookie === undefined ? undefined : `${cookie.name}=${cookie.value}`;
}

/**
 * A request over node:http, which (unlike fetch) sends the Host header it is given: how a
 * browser reaching the admin under another name, or through a proxy, looks to it.
 */
export function requestWithHost(baseUrl: string, method: string, path: string, body: unknown, headers: Record<string, string>): Promise<HarnessResponse> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(`${baseUrl}${path}`, { method, headers: { 'content-type': 'application/json', ...headers } }, (incoming) => {
      const chunks: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
      incoming.on('end', () => {
        const responseHeaders = new Headers();
        for (const [name, value] of Object.entries(incoming.headers)) {
          for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) responseHeaders.append(name, one);
        }
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: incoming.statusCode ?? 0, headers: responseHeaders, text, json: text === '' ? undefined : JSON.parse(text) });
      });
    });
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

/** Signs in with email and password; the raw answer. A `host` header is really sent (node:http). */
export function signIn(admin: AdminHarness, email: string, password: string, headers: Record<string, string> = {}): Promise<HarnessResponse> {
  if (headers.host !== undefined) return requestWithHost(admin.baseUrl, 'POST', '/auth/sign-in', { email, password }, headers);
  return callAnonymously(admin, 'POST', '/auth/sign-in', { email, password }, headers);
}

/** The token of a link URL (`…/#/link/<token>`). */
export function linkTokenOf(url: string): string {
  const match = /#\/link\/([A-Za-z0-9_-]+)$/.exec(url);
  expect(match, url).not.toBeNull();
  return match![1]!;
}

/** Creates an organisation with the platform token; its id. */
export async function createOrganisation(admin: AdminHarness, name = 'Acme'): Promise<string> {
  const response = await admin.request('POST', '/admin/v1/organisations', { name });
  expect(response.status, response.text).toBe(201);
  return response.json.id as string;
}

/** Invites an email into an organisation with the platform token (or `as`); the link's token. */
export async function invite(admin: AdminHarness, organisationId: string, email: string, role: string, as?: SessionClient): Promise<string> {
  const path = `/admin/v1/organisations/${organisationId}/invitations`;
  const response = as ? await as.request('POST', path, { email, role }) : await admin.request('POST', path, { email, role });
  expect(response.status, response.text).toBe(201);
  return linkTokenOf(response.json.link as string);
}

/** Follows a link with a password; the raw answer. */
export function followLink(admin: AdminHarness, token: string, password: string, extra: Record<string, unknown> = {}): Promise<HarnessResponse> {
  return callAnonymously(admin, 'POST', `/auth/links/${token}`, { password, ...extra });
}

/** A new person who joined the organisation with this role through an invitation, signed in. */
export async function newMember(
  admin: AdminHarness, organisationId: string, role: string, label = role,
): Promise<SessionClient & { email: string; password: string }> {
  const email = testEmail(label);
  const password = testPassword(label);
  const token = await invite(admin, organisationId, email, role);
  const client = sessionClientOf(admin, await followLink(admin, token, password));
  return { ...client, email, password };
}
