/**
 * The runtime pieces together over real HTTP on port 0: a probe server that stops last (as the
 * ledger's does) beside an app server whose in-flight request must drain.
 */
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { createLogger } from '@gateway/logger';
import { afterEach, describe, expect, it } from 'vitest';
import { createHealthProbes, createProbeOnlyListener } from './health-probes.ts';
import { startHttpServer, type RunningHttpServer } from './http-server.ts';
import { createLifecycle } from './lifecycle.ts';

const logger = createLogger('runtime-test', 'silent');
const host = '127.0.0.1';

/** A promise with its resolve exposed, to hold a handler until the test lets it go. */
function gate<T = void>(): { promise: Promise<T>; open(value: T): void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => { open = resolve; });
  return { promise, open };
}

/** One GET over a fresh connection: status, headers and body, or the socket error. */
function get(port: number, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: IncomingMessage['headers']; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host, port, path, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => { body += chunk; });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Whether something accepts connections on the port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = httpRequest({ host, port, path: '/healthz', agent: false });
    probe.on('response', (res) => { res.resume(); resolve(true); });
    probe.on('error', () => resolve(false));
    probe.end();
  });
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

/** A service in miniature: probes first (they stop last), then an app whose /slow waits for the test. */
async function startService(options: { graceMs: number; databaseUp: () => boolean }) {
  const entered = gate();
  const release = gate<string>();
  let app!: RunningHttpServer;
  let probesPort = 0;
  const lifecycle = createLifecycle({ logger });
  await lifecycle.start(async () => {
    const probes = createHealthProbes({
      isServing: lifecycle.isReady,
      dependencies: [{ name: 'database', ready: async () => options.databaseUp() }],
    });
    const probeServer = await startHttpServer({
      listener: createProbeOnlyListener(probes, { logger, notFoundMessage: 'Only probes here.' }), host, port: 0, logger,
    });
    lifecycle.defer('probe server', () => probeServer.close(0));
    probesPort = probeServer.port;
    app = await startHttpServer({
      host, port: 0, logger,
      listener: (req: IncomingMessage, res: ServerResponse) => {
        entered.open();
        void release.promise.then((body) => { res.setHeader('content-type', 'text/plain'); res.end(body); });
      },
    });
    lifecycle.defer('app server', () => app.close(options.graceMs));
  });
  cleanups.push(() => lifecycle.close());
  return { lifecycle, app, probesPort, entered, release };
}

describe('service runtime over HTTP', () => {
  it('turns ready after the start, follows its dependency, and names nothing it does not report', async () => {
    let databaseUp = true;
    const service = await startService({ graceMs: 5_000, databaseUp: () => databaseUp });
    const ready = await get(service.probesPort, '/readyz', { 'x-request-id': 'probe-7' });
    expect([ready.status, JSON.parse(ready.body)]).toEqual([200, { status: 'ready' }]);
    expect(ready.headers['x-request-id']).toBe('probe-7');
    expect(ready.headers['content-type']).toBe('application/json');

    databaseUp = false;
    const down = await get(service.probesPort, '/readyz');
    expect([down.status, JSON.parse(down.body)]).toEqual([503, { status: 'not_ready' }]);
    const alive = await get(service.probesPort, '/healthz');
    expect([alive.status, JSON.parse(alive.body)]).toEqual([200, { status: 'ok' }]);

    databaseUp = true;
    expect((await get(service.probesPort, '/readyz')).status).toBe(200);
    const other = await get(service.probesPort, '/v1/anything');
    expect(other.status).toBe(404);
    expect(JSON.parse(other.body)).toMatchObject({ error: { code: 'not_found', message: 'Only probes here.' } });
  });

  it('is not ready as soon as close begins, lets the in-flight request finish, then frees both ports', async () => {
    const service = await startService({ graceMs: 10_000, databaseUp: () => true });
    const inFlight = get(service.app.port, '/slow');
    await service.entered.promise;

    const closed = service.lifecycle.close();
    expect(service.lifecycle.isReady()).toBe(false);
    // The probe server stops last: during the drain it answers 503, not a refused connection.
    const draining = await get(service.probesPort, '/readyz');
    expect([draining.status, JSON.parse(draining.body)]).toEqual([503, { status: 'not_ready' }]);
    expect(await accepts(service.app.port)).toBe(false);

    service.release.open('finished');
    const answer = await inFlight;
    expect([answer.status, answer.body]).toEqual([200, 'finished']);
    // A keep-alive client is told not to send its next request into a server that is stopping.
    expect(answer.headers.connection).toBe('close');
    await closed;
    expect(await accepts(service.probesPort)).toBe(false);
  });

  it('cuts a request still running when the grace is over', async () => {
    const service = await startService({ graceMs: 200, databaseUp: () => true });
    const inFlight = get(service.app.port, '/slow').then(() => 'answered', () => 'cut');
    await service.entered.promise;
    await service.lifecycle.close();
    expect(await inFlight).toBe('cut');
  });

  it('rejects the start when the port is taken, and closes what had started', async () => {
    const first = await startHttpServer({ listener: (_req, res) => res.end(), host, port: 0 });
    cleanups.push(() => first.close(0));
    let probesPort = 0;
    const starting = createLifecycle({ logger });
    const start = starting.start(async () => {
      const probes = createHealthProbes({ isServing: starting.isReady });
      const probeServer = await startHttpServer({ listener: createProbeOnlyListener(probes, { logger, notFoundMessage: 'x' }), host, port: 0 });
      starting.defer('probe server', () => probeServer.close(0));
      probesPort = probeServer.port;
      await startHttpServer({ listener: (_req, res) => res.end(), host, port: first.port });
    });
    await expect(start).rejects.toMatchObject({ code: 'EADDRINUSE' });
    expect(probesPort).toBeGreaterThan(0);
    expect(await accepts(probesPort)).toBe(false);
  });
});
