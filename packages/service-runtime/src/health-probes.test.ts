import { describe, expect, it } from 'vitest';
import { createHealthProbes } from './health-probes.ts';

describe('health probes', () => {
  it('names every reported dependency, gates only on those with a check (the proxy\'s body)', async () => {
    let serving = true;
    let fresh = true;
    let outboxFull = false;
    const probes = createHealthProbes({
      isServing: () => serving,
      dependencies: [
        { name: 'config', ready: () => fresh, state: () => (fresh ? 'fresh' : 'stale') },
        { name: 'ledger', state: () => 'down' },
        { name: 'redis', state: () => 'in_process' },
        { name: 'settle_outbox', ready: () => !outboxFull },
      ],
    });
    expect(probes.liveness()).toEqual({ status: 200, body: { status: 'ok' } });
    // A reported-only dependency that is down does not unready the service.
    expect(await probes.readiness()).toEqual({ status: 200, body: { status: 'ready', dependencies: { config: 'fresh', ledger: 'down', redis: 'in_process' } } });
    fresh = false;
    expect(await probes.readiness()).toEqual({ status: 503, body: { status: 'not_ready', dependencies: { config: 'stale', ledger: 'down', redis: 'in_process' } } });
    fresh = true;
    outboxFull = true;
    expect((await probes.readiness()).status).toBe(503);
    outboxFull = false;
    serving = false;
    expect(await probes.readiness()).toEqual({ status: 503, body: { status: 'not_ready', dependencies: { config: 'fresh', ledger: 'down', redis: 'in_process' } } });
    // Liveness does not follow readiness.
    expect(probes.liveness().status).toBe(200);
  });

  it('asks no dependency before the start finished, and is not ready if close began during a check', async () => {
    let serving = false;
    let asked = 0;
    let answer: (up: boolean) => void = () => undefined;
    const probes = createHealthProbes({
      isServing: () => serving,
      dependencies: [{ name: 'database', ready: () => { asked += 1; return new Promise<boolean>((resolve) => { answer = resolve; }); } }],
    });
    const before = probes.readiness();
    expect(await before).toEqual({ status: 503, body: { status: 'not_ready' } });
    expect(asked).toBe(0);

    serving = true;
    const during = probes.readiness();
    expect(asked).toBe(1);
    serving = false; // close() begins while the database query is out
    answer(true);
    expect(await during).toEqual({ status: 503, body: { status: 'not_ready' } });
  });
});
