import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookSender } from './webhook-sender.ts';

let server: Server;
let port: number;
let received = 0;

beforeAll(async () => {
  server = createServer((request, response) => {
    received += 1;
    request.resume();
    request.on('end', () => {
      response.statusCode = request.url === '/slow' ? 200 : request.url === '/redirect' ? 302 : 202;
      if (request.url === '/redirect') response.setHeader('location', '/elsewhere');
      if (request.url === '/slow') setTimeout(() => response.end(), 1_000);
      else response.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('webhook sender', () => {
  it('delivers on a 2xx and treats a redirect as a failure (not followed)', async () => {
    const sender = createWebhookSender({ timeoutMs: 2_000, allowPrivate: true });
    try {
      expect(await sender.send(`http://127.0.0.1:${port}/ok`, '{}', { 'content-type': 'application/json' }))
        .toMatchObject({ delivered: true, statusCode: 202, errorClass: null });
      expect(await sender.send(`http://127.0.0.1:${port}/redirect`, '{}', {}))
        .toMatchObject({ delivered: false, statusCode: 302, errorClass: 'http_status' });
    } finally {
      await sender.close();
    }
  });

  it('refuses a loopback receiver before connecting unless private receivers are allowed, by literal or by name', async () => {
    const resolve = async () => [{ address: '127.0.0.1', family: 4 as const }];
    const sender = createWebhookSender({ timeoutMs: 2_000, allowPrivate: false, resolve });
    try {
      const before = received;
      expect(await sender.send(`http://127.0.0.1:${port}/ok`, '{}', {})).toMatchObject({ delivered: false, statusCode: null, errorClass: 'address_refused' });
      expect(await sender.send(`http://rebound.example:${port}/ok`, '{}', {})).toMatchObject({ delivered: false, statusCode: null, errorClass: 'address_refused' });
      expect(received).toBe(before);
    } finally {
      await sender.close();
    }
  });

  it('gives up on a receiver slower than the deadline (timeout)', async () => {
    const sender = createWebhookSender({ timeoutMs: 200, allowPrivate: true });
    try {
      expect(await sender.send(`http://127.0.0.1:${port}/slow`, '{}', {})).toMatchObject({ delivered: false, statusCode: null, errorClass: 'timeout' });
    } finally {
      await sender.close();
    }
  });
});
