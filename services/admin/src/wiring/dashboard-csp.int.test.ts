/**
 * The dashboard's Content-Security-Policy by payment provider, over real HTTP: Razorpay Checkout's
 * hosts are allowed only with PAYMENT_PROVIDER=razorpay; the local provider and no provider keep
 * the same-origin-only policy (the local pay page is a navigation, which the CSP does not govern).
 */
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import { createDashboard } from './dashboard.ts';

const servers: Array<{ close(): void }> = [];

afterAll(() => {
  for (const server of servers) server.close();
});

/** The CSP directives of the page `/` as served for `paymentProvider`, by directive name. */
async function cspFor(paymentProvider: 'razorpay' | 'local' | undefined): Promise<Map<string, string[]>> {
  const handler = await createDashboard({ logger: createLogger('admin', 'silent'), paymentProvider });
  const app = express();
  app.use(handler!);
  const server = app.listen(0, '127.0.0.1');
  servers.push(server);
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const { port } = server.address() as AddressInfo;
  const response = await fetch(`http://127.0.0.1:${port}/`, { headers: { accept: 'text/html' } });
  expect(response.status).toBe(200);
  const policy = response.headers.get('content-security-policy') ?? '';
  return new Map(policy.split(';').map((directive) => directive.trim().split(/\s+/)).map(([name, ...values]) => [name!, values]));
}

describe('the dashboard CSP and the payment provider', () => {
  it('allows Razorpay Checkout\'s script, frames and calls only with PAYMENT_PROVIDER=razorpay', async () => {
    const csp = await cspFor('razorpay');
    expect(csp.get('script-src')).toEqual(["'self'", 'https://checkout.razorpay.com']);
    expect(csp.get('frame-src')).toEqual(['https://checkout.razorpay.com', 'https://api.razorpay.com']);
    expect(csp.get('connect-src')).toEqual(["'self'", 'https://checkout.razorpay.com', 'https://api.razorpay.com']);
    expect(csp.get('style-src')).toEqual(["'self'"]);
    expect(csp.get('frame-ancestors')).toEqual(["'none'"]);
  });

  it.each(['local', undefined] as const)('keeps everything same-origin with PAYMENT_PROVIDER=%s', async (provider) => {
    const csp = await cspFor(provider);
    for (const directive of ['script-src', 'connect-src', 'style-src']) expect(csp.get(directive), directive).toEqual(["'self'"]);
    expect(csp.has('frame-src')).toBe(false);
    expect(csp.get('default-src')).toEqual(["'self'"]);
  });
});
