import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { build } from 'esbuild';
import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from '@gateway/logger';

// The dashboard is Preact in TSX under services/admin/web, bundled here in memory once when the
// admin starts (no separate build step: `pnpm install` + `pnpm start`). The bundle's names carry a
// hash of their content, so browsers may cache them for a year; index.html, which names them, is
// revalidated on every load. The page talks only to /admin/v1 and /auth on the same origin.

/** The browser code's entry point and stylesheet. */
const webSource = resolve(import.meta.dirname, '../../web/src');

/** One built file as served. */
interface Asset {
  body: Buffer;
  contentType: string;
}

/** The built dashboard: index.html and the hashed assets by URL path. */
interface DashboardBundle {
  indexHtml: Buffer;
  assets: Map<string, Asset>;
}

/** The dashboard's Content-Security-Policy: only this origin's script, style and API calls (no inline code), no framing. */
const baseCsp = "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/**
 * The same policy with Razorpay Checkout allowed (PAYMENT_PROVIDER=razorpay only): its script from
 * checkout.razorpay.com, and its frames and calls to checkout.razorpay.com and api.razorpay.com.
 * The local provider needs nothing: its pay page is a plain navigation to its own origin.
 */
const razorpayCsp = "default-src 'self'; connect-src 'self' https://checkout.razorpay.com https://api.razorpay.com; img-src 'self' data:; style-src 'self'; "
  + "script-src 'self' https://checkout.razorpay.com; frame-src https://checkout.razorpay.com https://api.razorpay.com; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/**
 * Headers on every dashboard response: the CSP above, no MIME sniffing, and no Referer leaving
 * the dashboard.
 */
function securityHeadersFor(paymentProvider: 'razorpay' | 'local' | undefined): Record<string, string> {
  return {
    'content-security-policy': paymentProvider === 'razorpay' ? razorpayCsp : baseCsp,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  };
}

/** Path prefixes that belong to the API, the sign-in routes and the probes: never answered with the page. */
const apiPrefixes = ['/admin/v1', '/auth', '/healthz', '/readyz'];

function contentHash(body: Uint8Array): string {
  return createHash('sha256').update(body).digest('hex').slice(0, 16);
}

function indexHtmlOf(scriptPath: string, stylePath: string): string {
  return `<!doctype html>
<html lang="en-IN">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Gateway dashboard</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${stylePath}">
<script type="module" src="${scriptPath}"></script>
</head>
<body>
<div id="app"></div>
<noscript><p>The dashboard needs JavaScript.</p></noscript>
</body>
</html>
`;
}

/** Bundles web/src (main.tsx to app.js, styles.css to app.css), minified, in memory. */
async function buildBundle(): Promise<DashboardBundle> {
  const result = await build({
    entryPoints: [
      { in: resolve(webSource, 'main.tsx'), out: 'app' },
      { in: resolve(webSource, 'styles.css'), out: 'app' },
    ],
    outdir: '/dashboard', // never written (write: false); names the outputs only
    bundle: true,
    write: false,
    format: 'esm',
    target: ['es2022', 'chrome110', 'firefox110', 'safari16'],
    minify: true,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    legalComments: 'none',
    logLevel: 'silent',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  const assets = new Map<string, Asset>();
  const paths: Record<string, string> = {};
  for (const file of result.outputFiles) {
    const extension = file.path.endsWith('.css') ? 'css' : 'js';
    const path = `/assets/app.${contentHash(file.contents)}.${extension}`;
    paths[extension] = path;
    assets.set(path, {
      body: Buffer.from(file.contents),
      contentType: extension === 'css' ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8',
    });
  }
  if (paths.js === undefined || paths.css === undefined) throw new Error('the dashboard build produced no app.js or app.css');
  return { indexHtml: Buffer.from(indexHtmlOf(paths.js, paths.css)), assets };
}

/** One build per process: every admin started in it (tests start many) serves the same bundle. */
let bundleOnce: Promise<DashboardBundle> | undefined;

/** Whether a request outside the API is a browser navigating (it prefers HTML over JSON). */
function wantsPage(request: Request): boolean {
  if (request.path === '/') return true;
  if (apiPrefixes.some((prefix) => request.path === prefix || request.path.startsWith(`${prefix}/`))) return false;
  return request.accepts(['application/json', 'text/html']) === 'text/html';
}

function send(response: Response, headers: Record<string, string>, body: Buffer, contentType: string, cacheControl: string): void {
  response.status(200).set({ ...headers, 'content-type': contentType, 'cache-control': cacheControl }).send(body);
}

/**
 * Builds the dashboard's pages and assets; the handler serves them (undefined: no dashboard).
 * Serves GET/HEAD of `/`, the hashed `/assets/app.<hash>.{js,css}` (cached for a year), and
 * index.html for any other path a browser navigates to outside /admin/v1, /auth and the probes;
 * everything else falls through to the admin's 404. `paymentProvider` (PAYMENT_PROVIDER) widens the
 * CSP for Razorpay Checkout when it is 'razorpay'.
 */
export async function createDashboard(deps: { logger: Logger; paymentProvider?: 'razorpay' | 'local' | undefined }): Promise<RequestHandler | undefined> {
  const started = performance.now();
  bundleOnce ??= buildBundle();
  const bundle = await bundleOnce.catch((error: unknown) => {
    bundleOnce = undefined;
    throw new Error('The dashboard (services/admin/web) failed to build', { cause: error });
  });
  deps.logger.info({
    ms: Math.round(performance.now() - started),
    assets: Object.fromEntries([...bundle.assets].map(([path, asset]) => [path, asset.body.length])),
  }, 'dashboard built');

  const headers = securityHeadersFor(deps.paymentProvider);
  return (request, response, next) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return next();
    const asset = bundle.assets.get(request.path);
    if (asset !== undefined) return send(response, headers, asset.body, asset.contentType, 'public, max-age=31536000, immutable');
    if (request.path.startsWith('/assets/') || !wantsPage(request)) return next();
    return send(response, headers, bundle.indexHtml, 'text/html; charset=utf-8', 'no-cache');
  };
}
