/**
 * Bad input on the admin, over real PostgreSQL: every bad input gets a 4xx in the error
 * shape, never a 500. NUL and lone surrogates in any body string, query parameter or path
 * segment (PostgreSQL refuses NUL: 22021) are a 400 naming the field; malformed paths are a 400
 * before the token is looked at; content encodings are decoded or refused; oversize headers and
 * Node's own parser errors answer JSON over raw sockets. Nothing refused is written.
 */
import { brotliCompressSync, gzipSync, zstdCompressSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '@gateway/db';
import { sendRawHttp, type RawHttpAnswer } from '@gateway/http-guard';
import { createTestDatabase, testPostgresUrl, type TestDatabase } from '@gateway/testkit';
import { startAdminHarness, type AdminHarness, type HarnessResponse } from '../../test-support/admin-harness.ts';

const serverUrl = testPostgresUrl();
const describePg = describe.skipIf(!serverUrl);

let testDatabase: TestDatabase;
let admin: AdminHarness;
let db: Database;
let port: number;

beforeAll(async () => {
  if (!serverUrl) return;
  testDatabase = await createTestDatabase(serverUrl);
  admin = await startAdminHarness({ databaseUrl: testDatabase.url });
  db = await openDatabase({ url: testDatabase.url, schema: 'admin', poolSize: 1 });
  port = admin.app.ports.http;
});
afterAll(async () => {
  await db?.close();
  await admin?.close();
  await testDatabase?.drop();
});

async function organisationCount(): Promise<number> {
  const { rows } = await db.query<{ count: bigint }>('SELECT count(*)::bigint AS count FROM organisations');
  return Number(rows[0]!.count);
}

function expectError(response: HarnessResponse, status: number, code: string, param?: string | null): void {
  expect(response.status, response.text).toBe(status);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  expect(response.json?.error).toMatchObject({ code, type: expect.any(String), message: expect.any(String) });
  if (param !== undefined) expect(response.json.error.param).toBe(param);
}

function expectRawError(answer: RawHttpAnswer, status: number, code: string): void {
  expect(answer.status, `${answer.ending}: ${answer.body}`).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  expect(answer.json).toMatchObject({ error: { code, type: 'invalid_request_error', param: null, message: expect.any(String) } });
}

/** POSTs raw bytes with the platform token. */
async function postRaw(path: string, body: string | Buffer, headers: Record<string, string> = {}): Promise<HarnessResponse> {
  const response = await fetch(`${admin.baseUrl}${path}`, {
    method: 'POST', headers: { authorization: `Bearer ${admin.token}`, 'content-type': 'application/json', ...headers }, body,
  });
  const text = await response.text();
  let json: unknown;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: response.status, headers: response.headers, text, json };
}

describePg('text PostgreSQL cannot store', () => {
  it('is a 400 naming the field in a body string, a nested string, a key or a query parameter; nothing is written', async () => {
    const before = await organisationCount();
    expectError(await admin.request('POST', '/admin/v1/organisations', { name: 'Acme\u0000Corp' }), 400, 'invalid_request', 'name');
    expectError(await admin.request('POST', '/admin/v1/organisations', { name: 'Acme \ud800' }), 400, 'invalid_request', 'name');
    expectError(await admin.request('POST', '/admin/v1/organisations', { name: 'Acme', allowed_gateway_models: ['ok', 'b\u0000d'] }),
      400, 'invalid_request', 'allowed_gateway_models[1]');
    expectError(await admin.request('POST', '/admin/v1/organisations', { name: 'Acme', 'k\u0000': 1 }), 400, 'invalid_request');
    expectError(await admin.request('GET', '/admin/v1/organisations?after=a%00b'), 400, 'invalid_request', 'after');
    expect(await organisationCount()).toBe(before);
  });

  it('is a 400 in a path segment, and a malformed escape is a 400 even without a token', async () => {
    expectError(await admin.request('GET', '/admin/v1/organisations/a%00b'), 400, 'invalid_request');
    expectError(await admin.request('GET', '/admin/v1/gateway-models/x%00y'), 400, 'invalid_request');
    for (const path of ['/admin/v1/organisations/%E0%A4%A', '/admin/v1/gateway-models/%ZZ', '/admin/v1/organisations/%ED%A0%80/balance']) {
      const response = await admin.request('GET', path, undefined, { authorization: '' });
      expectError(response, 400, 'invalid_request');
      expect(response.text).not.toContain('%');
    }
  });

  it('still accepts any well-formed Unicode', async () => {
    const response = await admin.request('POST', '/admin/v1/organisations', { name: 'Ａｃｍｅ ऄ \u{1f600} ‮' });
    expect(response.status, response.text).toBe(201);
  });
});

describePg('content encodings', () => {
  it('decodes gzip and br bodies', async () => {
    for (const [encoding, encoded] of [['gzip', gzipSync('{"name":"Zipped"}')], ['br', brotliCompressSync('{"name":"Brotli"}')]] as const) {
      const response = await postRaw('/admin/v1/organisations', encoded, { 'content-encoding': encoding });
      expect(response.status, `${encoding}: ${response.text}`).toBe(201);
    }
  });

  it('answers 400 for a body that claims gzip and is not, 415 for zstd or an unknown coding, 413 for a zip bomb', async () => {
    const before = await organisationCount();
    expectError(await postRaw('/admin/v1/organisations', '{"name":"Plain"}', { 'content-encoding': 'gzip' }), 400, 'invalid_request');
    expectError(await postRaw('/admin/v1/organisations', zstdCompressSync('{"name":"Z"}'), { 'content-encoding': 'zstd' }), 415, 'unsupported_media_type');
    expectError(await postRaw('/admin/v1/organisations', '{"name":"X"}', { 'content-encoding': 'x-custom' }), 415, 'unsupported_media_type');
    const bomb = gzipSync(Buffer.concat([Buffer.from('{"name":"'), Buffer.alloc(8 * 1024 * 1024, 0x61), Buffer.from('"}')]));
    expectError(await postRaw('/admin/v1/organisations', bomb, { 'content-encoding': 'gzip' }), 413, 'request_too_large');
    expectError(await postRaw('/admin/v1/organisations', `${'['.repeat(10_000)}${']'.repeat(10_000)}`), 400, 'invalid_request');
    expect(await organisationCount()).toBe(before);
  });
});

describePg("Node's HTTP parser", () => {
  it('answers an Authorization header over 16 KiB with 431 in the error shape, never a reset', async () => {
    for (const size of [17 * 1024, 2 * 1024 * 1024]) {
      const answer = await sendRawHttp(port, `GET /admin/v1/organisations HTTP/1.1\r\nHost: admin\r\nAuthorization: Bearer ${'t'.repeat(size)}\r\n\r\n`);
      expect(answer.ending).toBe('answered');
      expectRawError(answer, 431, 'headers_too_large');
    }
  });

  it('answers malformed requests with 400 in the error shape, then still serves', async () => {
    for (const request of [
      'BROKEN REQUEST LINE\r\n\r\n',
      'POST /admin/v1/organisations HTTP/1.1\r\nHost: admin\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n',
      'GET /admin/v1/organisations HTTP/1.1\r\nHost: admin\r\nBad\u0001Header: x\r\n\r\n',
    ]) expectRawError(await sendRawHttp(port, request), 400, 'invalid_request');
    const answer = await admin.request('GET', '/admin/v1/organisations');
    expect(answer.status).toBe(200);
  });
});
