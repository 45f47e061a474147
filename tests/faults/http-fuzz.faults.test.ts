/**
 * Fault suite: fuzzing of the proxy's /v1 and the admin's /admin/v1.
 * fast-check drives a bounded number of requests against a real gateway (ledger, admin and proxy
 * as processes over PostgreSQL, the helpers the e2e tests use), with a valid API key and admin
 * token so the fuzz reaches the handlers, not only the 401 path: malformed JSON, NUL and odd
 * unicode in every string, huge numbers, __proto__/constructor keys, deep nesting, content
 * encodings, long headers, odd methods and paths, and raw bytes Node's HTTP parser refuses.
 * Checked: no answer >= 500, every error answer in the JSON error shape, the services still
 * answer afterwards, and money moved only for the requests that succeeded.
 */
import { brotliCompressSync, deflateSync, gzipSync, zstdCompressSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendRawHttp } from '@gateway/http-guard';
import { testPostgresUrl } from '@gateway/testkit';
import { startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';
import { recordFault } from './support/fault-table.ts';

const serverUrl = testPostgresUrl();
/** Runs per property; a few hundred per endpoint keeps the file well under a minute. */
const runs = { chat: 300, proxyRoutes: 150, adminBodies: 300, adminRoutes: 150, raw: 60 } as const;
const chatCreditMicros = 100_000_000n;

// ---------------------------------------------------------------- generators

/** Strings that have broken things somewhere: NUL, lone surrogates, bidi, BOM, long, SQL-ish. */
const oddString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ maxLength: 20 }),
  fc.constantFrom(
    '\u0000', 'a\u0000b', '\ud800', 'x\udfff', '\ud83d', '\u202eevil', '\ufeff', '\uffff', '\u{10ffff}', 'ऄक्ष', '😀'.repeat(40),
    '%00', '%E0%A4%A', '../../etc/passwd', "'; DROP TABLE organisations;--", 'a'.repeat(5000), '', ' ', '\r\n', '[[fake:reply_words=3]]',
  ),
);

/** Number literals as JSON text, including the ones JavaScript turns into something else. */
const rawNumber: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('1e309', '-1e309', '18446744073709551616', '-18446744073709551616', '-0', '0', '1e-400', '9007199254740993', '-1', '1.5', '5', '64', '1000000000'),
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((value) => JSON.stringify(value)),
);

const rawKey: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'model', 'messages', 'content', 'role',
    'max_tokens', 'stream', 'name', 'amount_micros', 'reason', 'rpm_limit', 'status', 'slug', 'upstream', 'tools', 'response_format'),
  oddString,
);

/** Any JSON value as text (so raw number literals and duplicate or __proto__ keys survive). */
const rawJson: fc.Arbitrary<string> = fc.letrec<{ value: string; scalar: string; array: string; object: string }>((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, tie('scalar'), tie('array'), tie('object')),
  scalar: fc.oneof(rawNumber, oddString.map((text) => JSON.stringify(text)), fc.constantFrom('true', 'false', 'null', '"NaN"', '"Infinity"')),
  array: fc.array(tie('value'), { maxLength: 4 }).map((items) => `[${items.join(',')}]`),
  object: fc.array(fc.tuple(rawKey, tie('value')), { maxLength: 4 })
    .map((entries) => `{${entries.map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(',')}}`),
})).value;

/** Nesting far past any limit, in a field or as the whole body. */
const deepNesting: fc.Arbitrary<string> = fc.constantFrom(100, 10_000, 100_000).chain((levels) => fc.constantFrom(
  `${'['.repeat(levels)}${']'.repeat(levels)}`,
  `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`,
));

/** JSON text that is not quite JSON: cut short, with junk, or not JSON at all. */
const malformedJson: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(rawJson, fc.nat(), fc.constantFrom('', '{', '}', ',', '"', '\\', 'NaN', 'undefined', "'", '\u0000', '\ud800'))
    .map(([text, cut, junk]) => `${text.slice(0, cut % (text.length + 1))}${junk}`),
  fc.constantFrom('', ' ', 'null', '"a string"', '{"a":1,}', "{'a':1}", '{"a":01}', '{"a":+1}', '{"a":.5}', '{"a":NaN}', '\ufeff{}', '{"a":"\\x41"}', '{"a":"\\u12"}'),
);

/** A body shaped like a chat request with fuzzed fields: most reach schema validation, some succeed. */
const chatBody: fc.Arbitrary<string> = fc.record({
  model: fc.oneof({ weight: 3, arbitrary: fc.constant('"e2e-chat"') }, { weight: 1, arbitrary: rawJson }),
  content: fc.oneof(oddString.map((text) => JSON.stringify(text)), rawJson),
  maxTokens: fc.option(fc.oneof(rawNumber, fc.constantFrom('1', '8', '16')), { nil: undefined }),
  stream: fc.option(fc.constantFrom('true', 'false', '"true"', 'null', '1'), { nil: undefined }),
  extra: fc.array(fc.tuple(rawKey, rawJson), { maxLength: 3 }),
}).map(({ model, content, maxTokens, stream, extra }) => {
  const fields = [`"model":${model}`, `"messages":[{"role":"user","content":${content}}]`];
  if (maxTokens !== undefined) fields.push(`"max_tokens":${maxTokens}`);
  if (stream !== undefined) fields.push(`"stream":${stream}`);
  for (const [key, value] of extra) fields.push(`${JSON.stringify(key)}:${value}`);
  return `{${fields.join(',')}}`;
});

/** How a body travels: its Content-Encoding (true, lying, refused) and Content-Type. */
interface Transport { encoding: 'none' | 'gzip' | 'deflate' | 'br' | 'gzip-lie' | 'zstd' | 'bogus'; contentType: string | undefined; longHeaderBytes: number }
const transport: fc.Arbitrary<Transport> = fc.record({
  encoding: fc.oneof(
    { weight: 6, arbitrary: fc.constant('none' as const) },
    { weight: 1, arbitrary: fc.constantFrom('gzip' as const, 'deflate' as const, 'br' as const, 'gzip-lie' as const, 'zstd' as const, 'bogus' as const) },
  ),
  contentType: fc.constantFrom('application/json', 'application/json', 'text/plain', 'application/json; charset=utf-16', 'application/json; charset=latin1', 'multipart/form-data; boundary=x', undefined),
  longHeaderBytes: fc.oneof({ weight: 9, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constantFrom(8_000, 17_000, 100_000) }),
});

function encodeBody(text: string, how: Transport): { body: Buffer; headers: Record<string, string> } {
  const plain = Buffer.from(text, 'utf8');
  const headers: Record<string, string> = {};
  if (how.contentType !== undefined) headers['content-type'] = how.contentType;
  if (how.longHeaderBytes > 0) headers['x-fuzz-padding'] = 'p'.repeat(how.longHeaderBytes);
  switch (how.encoding) {
    case 'none': return { body: plain, headers };
    case 'gzip': return { body: gzipSync(plain), headers: { ...headers, 'content-encoding': 'gzip' } };
    case 'deflate': return { body: deflateSync(plain), headers: { ...headers, 'content-encoding': 'deflate' } };
    case 'br': return { body: brotliCompressSync(plain), headers: { ...headers, 'content-encoding': 'br' } };
    case 'gzip-lie': return { body: plain, headers: { ...headers, 'content-encoding': 'gzip' } };
    case 'zstd': return { body: zstdCompressSync(plain), headers: { ...headers, 'content-encoding': 'zstd' } };
    case 'bogus': return { body: plain, headers: { ...headers, 'content-encoding': 'x-bogus, gzip' } };
  }
}

/** Percent-encodes every UTF-8 byte of a string (a lone surrogate becomes U+FFFD's bytes). */
function percentEncoded(text: string): string {
  return [...Buffer.from(text, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0').toUpperCase()}`).join('');
}

/** A path segment: plain, fully percent-encoded, or a hand-made broken escape. */
const pathSegment: fc.Arbitrary<string> = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9._~-]{0,20}$/),
  oddString.map(percentEncoded),
  fc.constantFrom('%E0%A4%A', '%00', '%', '%%', '%ZZ', '%ED%A0%80', '%C0%AF', '..', '.', '', 'org_does_not_exist', '%2F', '%FF%FE'),
);

/** A query string from fuzzed keys and values, encoded or raw. */
const queryString: fc.Arbitrary<string> = fc.array(
  fc.tuple(fc.oneof(rawKey.map(percentEncoded), fc.constantFrom('limit', 'after', 'cursor', 'project_id', 'model', 'from', 'to', 'organisation_id')),
    fc.oneof(oddString.map(percentEncoded), fc.constantFrom('%00', '%E0%A4%A', '1e309', '-1', '0', '18446744073709551616', '2026-13-45T99:00:00Z'))),
  { maxLength: 4 },
).map((pairs) => pairs.map(([key, value]) => `${key}=${value}`).join('&'));

const oddMethod = fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'PROPFIND', 'SEARCH', 'QUERY', 'FOO', 'M-SEARCH');

/** Raw requests for Node's parser: junk request lines, headers, chunk sizes; each complete, so the server never waits. */
const rawRequest: fc.Arbitrary<string> = fc.record({
  method: fc.constantFrom('GET', 'POST', 'G ET', '', 'GET\u0000', 'ÄÖ', 'PRI'),
  target: fc.constantFrom('/v1/models', '/admin/v1/organisations', '/v1/models/%E0%A4%A', '*', 'http://x/v1/models', '/\u0000', '/a b', '//'),
  version: fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1x', 'HTTPS/1.1', ''),
  headers: fc.array(fc.constantFrom('Host: x', 'Host: x', 'X-A: b', 'No-Colon', 'Bad\u0001Name: v', 'X-Nul: a\u0000b', ' Leading: space',
    'Content-Length: abc', 'Content-Length: 1', 'Transfer-Encoding: chunked, gzip', `X-Long: ${'l'.repeat(20_000)}`, 'Expect: 100-continue', 'Expect: nonsense'), { maxLength: 4 }),
  chunked: fc.option(fc.constantFrom('zz', '-1', 'ffffffffffffffffffff', '1;ext', '5'), { nil: undefined }),
}).map(({ method, target, version, headers, chunked }) => {
  const lines = [`${method} ${target} ${version}`.trim(), ...headers.filter((line) => !line.startsWith('Content-Length')), 'Connection: close'];
  if (chunked === undefined) return `${lines.join('\r\n')}\r\nContent-Length: 0\r\n\r\n`;
  return `${lines.join('\r\n')}\r\nTransfer-Encoding: chunked\r\n\r\n${chunked}\r\nhello\r\n0\r\n\r\n`;
});

// ---------------------------------------------------------------- checks

/** What the fuzz saw, for the table and the money checks. */
const seen = { requests: 0, byStatus: new Map<number, number>(), chatSuccesses: 0, creditIds: new Map<string, bigint>() };

function count(status: number): void {
  seen.requests += 1;
  seen.byStatus.set(status, (seen.byStatus.get(status) ?? 0) + 1);
}

/** Asserts one answer: below 500, and an error answer carries the JSON error shape. */
function checkAnswer(what: string, status: number, contentType: string | null | undefined, text: string, method = 'GET'): void {
  count(status);
  expect(status, `${what} -> ${status}: ${text.slice(0, 300)}`).toBeLessThan(500);
  if (status >= 400 && method !== 'HEAD') {
    expect(contentType ?? '', `${what} -> ${status} content-type`).toMatch(/^application\/json/);
    const body = JSON.parse(text) as { error?: Record<string, unknown> };
    expect(body.error, `${what} -> ${status}: ${text.slice(0, 300)}`).toMatchObject({
      message: expect.any(String), type: expect.any(String), code: expect.any(String),
    });
    expect(body.error!.param === null || typeof body.error!.param === 'string').toBe(true);
  }
}

/** Sends a request and checks the answer; returns status and text. */
async function send(url: string, init: { method: string; headers: Record<string, string>; body?: Buffer | string }, what: string): Promise<{ status: number; text: string }> {
  const hasBody = init.body !== undefined && init.method !== 'GET' && init.method !== 'HEAD';
  const response = await fetch(url, { method: init.method, headers: init.headers, ...(hasBody ? { body: init.body } : {}) });
  const text = await response.text();
  checkAnswer(what, response.status, response.headers.get('content-type'), text, init.method);
  return { status: response.status, text };
}

const fastCheckOptions = (numRuns: number) => ({ numRuns, endOnFailure: true, interruptAfterTimeLimit: 40_000 });

// ---------------------------------------------------------------- the suite

describe.skipIf(!serverUrl)('fuzz /v1 and /admin/v1', () => {
  let gateway: E2eGateway;
  let proxyBase: string;
  let adminBase: string;
  let fuzzOrganisationId: string;

  beforeAll(async () => {
    gateway = await startE2eGateway({ serverUrl: serverUrl!, logLevel: 'warn', rpmLimit: 1_000_000, creditMicros: chatCreditMicros });
    proxyBase = gateway.proxyBases[0]!.replace(/\/v1$/, '');
    adminBase = gateway.adminBase.replace(/\/admin\/v1$/, '');
    const created = await gateway.admin('POST', '/organisations', { name: 'Fuzz target' });
    fuzzOrganisationId = created.id as string;
  });
  afterAll(async () => { await gateway?.close(); });

  /** A URL on the admin for a path starting at /admin/v1. */
  const adminUrl = (path: string) => `${adminBase}${path}`;

  it('never answers >= 500, every error in the shape, and money moves only for what succeeded', async () => {
    const startedAt = Date.now();
    const auth = { authorization: `Bearer ${gateway.apiKey}` };
    const adminAuth = { authorization: `Bearer ${gateway.adminToken}` };

    // 1. Chat completions: fuzzed bodies, encodings and headers, with a valid key.
    await fc.assert(fc.asyncProperty(fc.oneof(
      { weight: 6, arbitrary: chatBody }, { weight: 2, arbitrary: rawJson }, { weight: 2, arbitrary: malformedJson }, { weight: 1, arbitrary: deepNesting },
    ), transport, async (text, how) => {
      const { body, headers } = encodeBody(text, how);
      const answer = await send(`${proxyBase}/v1/chat/completions`, { method: 'POST', headers: { ...auth, ...headers }, body }, `chat ${how.encoding} ${text.slice(0, 200)}`);
      if (answer.status === 200) seen.chatSuccesses += 1;
    }), fastCheckOptions(runs.chat));

    // 2. The proxy's routes with odd methods, paths and query strings, with and without the key.
    await fc.assert(fc.asyncProperty(oddMethod, fc.constantFrom('models', 'chat/completions', 'models/e2e-chat', 'x'),
      fc.array(pathSegment, { minLength: 1, maxLength: 3 }), queryString, fc.boolean(),
      async (method, route, segments, query, withKey) => {
        const path = `/v1/${route}/${segments.join('/')}`;
        await send(`${proxyBase}${path}${query === '' ? '' : `?${query}`}`, { method, headers: withKey ? auth : {}, body: '{}' }, `proxy ${method} ${path}`);
      }), fastCheckOptions(runs.proxyRoutes));

    // 3. The admin's writing routes with fuzzed bodies (a valid token, so validation is reached).
    const adminTargets = [
      { method: 'POST', path: '/admin/v1/organisations', template: (value: string) => `{"name":${value}}` },
      { method: 'PATCH', path: `/admin/v1/organisations/${fuzzOrganisationId}`, template: (value: string) => `{"name":${value},"rpm_limit":${value}}` },
      { method: 'POST', path: `/admin/v1/organisations/${fuzzOrganisationId}/credits`, template: (value: string) => `{"amount_micros":${value},"reason":"fuzz"}` },
      { method: 'POST', path: `/admin/v1/organisations/${fuzzOrganisationId}/projects`, template: (value: string) => `{"name":${value}}` },
      { method: 'POST', path: '/admin/v1/gateway-models', template: (value: string) => `{"slug":${value},"display_name":${value},"upstream":${value}}` },
    ];
    await fc.assert(fc.asyncProperty(
      fc.constantFrom(...adminTargets),
      fc.oneof({ weight: 4, arbitrary: fc.oneof(rawJson, oddString.map((s) => JSON.stringify(s)), rawNumber) }, { weight: 2, arbitrary: malformedJson }, { weight: 1, arbitrary: deepNesting }),
      fc.boolean(), transport, fc.constantFrom('fuzz-key-1', 'fuzz-key-2', 'bad key\u00e9', ''),
      async (target, value, wrap, how, idempotencyKey) => {
        const text = wrap ? target.template(value) : value;
        const { body, headers } = encodeBody(text, how);
        const extra: Record<string, string> = idempotencyKey === '' ? {} : { 'idempotency-key': encodeURIComponent(idempotencyKey) };
        const answer = await send(adminUrl(target.path), { method: target.method, headers: { ...adminAuth, ...extra, ...headers }, body }, `admin ${target.method} ${target.path} ${text.slice(0, 200)}`);
        if (target.path.endsWith('/credits') && answer.status >= 200 && answer.status < 300) {
          const credit = JSON.parse(answer.text) as { credit_id: string; amount_micros: string };
          seen.creditIds.set(credit.credit_id, BigInt(credit.amount_micros));
        }
      }), fastCheckOptions(runs.adminBodies));

    // 4. The admin's routes with odd methods, path segments and query strings.
    const adminBases = ['/admin/v1/organisations', `/admin/v1/organisations/${fuzzOrganisationId}/usage`, '/admin/v1/gateway-models', '/admin/v1/audit-events', '/admin/v1/projects', '/admin/v1'];
    await fc.assert(fc.asyncProperty(oddMethod, fc.constantFrom(...adminBases), fc.array(pathSegment, { minLength: 0, maxLength: 3 }), queryString, fc.boolean(),
      async (method, base, segments, query, withToken) => {
        const path = `${base}${segments.length === 0 ? '' : `/${segments.join('/')}`}`;
        await send(adminUrl(`${path}${query === '' ? '' : `?${query}`}`), { method, headers: withToken ? adminAuth : {}, body: '{}' }, `admin ${method} ${path}?${query}`);
      }), fastCheckOptions(runs.adminRoutes));

    // 5. Raw bytes for Node's parser on both services: an answer every time, never a reset or silence.
    const ports = [Number(new URL(proxyBase).port), Number(new URL(adminBase).port)];
    await fc.assert(fc.asyncProperty(rawRequest, fc.constantFrom(...ports), async (request, port) => {
      const answer = await sendRawHttp(port, request, 5_000);
      expect(answer.ending, `raw ${JSON.stringify(request.slice(0, 200))}: ${answer.body.slice(0, 200)}`).not.toBe('timeout');
      expect(answer.ending, `raw ${JSON.stringify(request.slice(0, 200))}`).not.toBe('reset');
      expect(answer.status, `raw ${JSON.stringify(request.slice(0, 200))}: ${answer.body.slice(0, 200)}`).toBeDefined();
      checkAnswer(`raw ${JSON.stringify(request.slice(0, 200))}`, answer.status!, answer.headers['content-type'], answer.body, request.startsWith('HEAD') ? 'HEAD' : 'GET');
    }), fastCheckOptions(runs.raw));

    // The services still answer.
    expect((await fetch(`${proxyBase}/v1/models`, { headers: auth })).status).toBe(200);
    expect((await fetch(adminUrl('/admin/v1/organisations?limit=1'), { headers: adminAuth })).status).toBe(200);

    // Money: the chat organisation paid exactly its usage records, one per successful completion;
    // the fuzz organisation holds exactly the credits that answered 2xx.
    const balance = await gateway.settledBalance();
    const usage = await waitForUsage(gateway, seen.chatSuccesses);
    const debited = usage.reduce((sum, record) => sum + BigInt(record.debited_micros), 0n);
    expect(usage).toHaveLength(seen.chatSuccesses);
    expect(BigInt(balance.held_micros)).toBe(0n);
    expect(BigInt(balance.credited_micros)).toBe(chatCreditMicros);
    expect(BigInt(balance.debited_micros)).toBe(debited);
    expect(BigInt(balance.available_micros)).toBe(chatCreditMicros - debited);
    const fuzzBalance = await gateway.admin('GET', `/organisations/${fuzzOrganisationId}/balance`);
    const credited = [...seen.creditIds.values()].reduce((sum, amount) => sum + amount, 0n);
    expect(BigInt(fuzzBalance.credited_micros)).toBe(credited);

    const statuses = [...seen.byStatus.entries()].sort(([a], [b]) => a - b).map(([status, n]) => `${status}×${n}`).join(' ');
    recordFault({
      scenario: 'fuzz /v1 and /admin/v1',
      injected: `${seen.requests} requests in ${Math.round((Date.now() - startedAt) / 1000)} s: malformed JSON, NUL, odd unicode, huge numbers, __proto__, deep nesting (10^5), encodings, long headers, odd methods/paths, raw parser junk`,
      checked: `0 answers >= 500 (${statuses}); every error JSON in the error shape; both still answer; ${seen.chatSuccesses} completions = ${usage.length} usage records, debited ${debited} µ₹ = their cost; ${seen.creditIds.size} fuzz credits = ${credited} µ₹ credited`,
      passed: true,
    });
  });
});

/** The chat organisation's usage records, once there are `expected` of them (Settles follow their responses). */
async function waitForUsage(gateway: E2eGateway, expected: number): Promise<Array<{ debited_micros: string }>> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const records: Array<{ debited_micros: string }> = [];
    let cursor: string | null = null;
    do {
      const page = await gateway.admin('GET', `/organisations/${gateway.organisationId}/usage?limit=500${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
      records.push(...(page.data as Array<{ debited_micros: string }>));
      cursor = page.next_cursor as string | null;
    } while (cursor !== null);
    if (records.length >= expected || Date.now() > deadline) return records;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
