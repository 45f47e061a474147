/**
 * The dashboard as the admin serves it (in-memory PGlite, fake ledger, real HTTP): the page at /
 * and as the fallback for browser navigations outside the API, the content-hashed bundle with a
 * long cache, the security headers, and the API's paths never answered with the page.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '@gateway/db';
import { startAdminHarness, type AdminHarness } from './test-support/admin-harness.ts';

const expectedCsp = "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

let admin: AdminHarness;
let database: Database;

beforeAll(async () => {
  // In memory: nothing is left in DATA_DIR.
  database = await openDatabase({ schema: 'admin' });
  admin = await startAdminHarness({ database });
});

afterAll(async () => {
  await admin?.close();
  await database?.close();
});

/** A browser-like GET without credentials. */
async function browserGet(path: string, accept = 'text/html,application/xhtml+xml,*/*;q=0.8', method = 'GET') {
  const response = await fetch(`${admin.baseUrl}${path}`, { method, headers: { accept } });
  return { response, text: await response.text() };
}

/** The asset paths index.html names. */
function assetPaths(html: string): { script: string; style: string } {
  const script = /<script type="module" src="(\/assets\/app\.[0-9a-f]{16}\.js)"><\/script>/.exec(html)?.[1];
  const style = /<link rel="stylesheet" href="(\/assets\/app\.[0-9a-f]{16}\.css)">/.exec(html)?.[1];
  expect(script).toBeDefined();
  expect(style).toBeDefined();
  return { script: script!, style: style! };
}

function expectSecurityHeaders(headers: Headers) {
  expect(headers.get('content-security-policy')).toBe(expectedCsp);
  expect(headers.get('x-content-type-options')).toBe('nosniff');
  expect(headers.get('referrer-policy')).toBe('no-referrer');
}

describe('dashboard', () => {
  it('serves index.html at / uncached, with the security headers and no inline script or style', async () => {
    const { response, text } = await browserGet('/');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expectSecurityHeaders(response.headers);
    expect(text).toContain('<div id="app"></div>');
    assetPaths(text);
    // The CSP forbids inline code: every script and style comes from a file.
    expect(text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(text).not.toMatch(/<style|style="/);
  });

  it('answers / with the page whatever Accept says, and HEAD without a body', async () => {
    const json = await browserGet('/', 'application/json');
    expect(json.response.status).toBe(200);
    expect(json.text).toContain('<div id="app"></div>');
    const head = await browserGet('/', 'text/html', 'HEAD');
    expect(head.response.status).toBe(200);
    expect(head.text).toBe('');
  });

  it('serves the bundle under content-hashed names, cached for a year', async () => {
    const { script, style } = assetPaths((await browserGet('/')).text);
    const js = await browserGet(script, '*/*');
    expect(js.response.status).toBe(200);
    expect(js.response.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.response.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expectSecurityHeaders(js.response.headers);
    // The bundle holds the app (its sign-in heading) with Preact and Chart.js inside: no imports left to resolve.
    expect(js.text).toContain('Sign in to the gateway dashboard');
    expect(js.text).not.toMatch(/\bfrom\s*["'](preact|chart\.js)/);
    const css = await browserGet(style, 'text/css,*/*;q=0.1');
    expect(css.response.status).toBe(200);
    expect(css.response.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(css.response.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(css.text).toContain('prefers-reduced-motion');
  });

  it('answers a browser navigating to any other dashboard path with the page (hash routes reload there too)', async () => {
    for (const path of ['/projects', '/overview/deep/path', '/link']) {
      const { response, text } = await browserGet(path);
      expect(response.status, path).toBe(200);
      expect(text, path).toContain('<div id="app"></div>');
      expectSecurityHeaders(response.headers);
    }
  });

  it('leaves JSON clients, other methods and unknown assets to the 404 in the error shape', async () => {
    for (const [path, accept, method] of [
      ['/projects', 'application/json', 'GET'],
      ['/projects', '*/*', 'GET'],
      ['/projects', 'text/html', 'POST'],
      ['/assets/app.0123456789abcdef.js', 'text/html', 'GET'],
    ] as const) {
      const { response, text } = await browserGet(path, accept, method);
      expect(response.status, `${method} ${path} ${accept}`).toBe(404);
      expect(JSON.parse(text).error.code).toBe('not_found');
    }
  });

  it('never answers the API, sign-in or probe paths with the page, even for a browser', async () => {
    for (const path of ['/admin/v1/no-such-route', '/admin/v1', '/auth/no-such-route']) {
      const { response, text } = await browserGet(path);
      expect(response.status, path).toBeGreaterThanOrEqual(400);
      expect(text, path).not.toContain('<div id="app">');
      expect(JSON.parse(text).error, path).toBeDefined();
    }
    const health = await browserGet('/healthz');
    expect(health.response.status).toBe(200);
    expect(JSON.parse(health.text)).toEqual({ status: 'ok' });
  });
});
