import { createLogger } from '@gateway/logger';
import { describe, expect, it } from 'vitest';
import { CleanupError, createLifecycle } from './lifecycle.ts';

const logger = createLogger('runtime-test', 'silent');

describe('lifecycle', () => {
  it('is ready only after the start finished, and not ready from the instant close begins', async () => {
    const lifecycle = createLifecycle({ logger });
    const readyWhileClosing: boolean[] = [];
    lifecycle.defer('first', () => { readyWhileClosing.push(lifecycle.isReady()); });
    expect(await lifecycle.start(async () => {
      expect(lifecycle.isReady()).toBe(false);
      return 'started';
    })).toBe('started');
    expect([lifecycle.isReady(), lifecycle.isClosing()]).toEqual([true, false]);
    const closed = lifecycle.close();
    // Synchronously, before any step has drained anything.
    expect([lifecycle.isReady(), lifecycle.isClosing()]).toEqual([false, true]);
    await closed;
    expect(readyWhileClosing).toEqual([false]);
  });

  it('stays not ready when close began while the start was still running', async () => {
    const lifecycle = createLifecycle({ logger });
    const closed = lifecycle.start(async () => { void lifecycle.close(); });
    await closed;
    expect(lifecycle.isReady()).toBe(false);
  });

  it('closes in reverse order, runs every step when one fails, and reports the failures', async () => {
    const lifecycle = createLifecycle({ logger });
    const ran: string[] = [];
    lifecycle.defer('database', () => { ran.push('database'); });
    lifecycle.defer('grpc', async () => { ran.push('grpc'); throw new Error('grpc would not stop'); });
    lifecycle.defer('http', async () => { ran.push('http'); });
    lifecycle.defer('sweeper', () => { ran.push('sweeper'); throw new Error('sweeper stuck'); });

    const error = await lifecycle.close().then(() => undefined, (caught: unknown) => caught);
    expect(ran).toEqual(['sweeper', 'http', 'grpc', 'database']);
    expect(error).toBeInstanceOf(CleanupError);
    const failures = (error as CleanupError).failures;
    expect(failures.map((failure) => [failure.name, (failure.error as Error).message])).toEqual([
      ['sweeper', 'sweeper stuck'], ['grpc', 'grpc would not stop'],
    ]);
    expect((error as CleanupError).message).toBe('close failed: sweeper, grpc');
  });

  it('runs each step once however often close is called', async () => {
    const lifecycle = createLifecycle({ logger });
    let runs = 0;
    lifecycle.defer('server', async () => { runs += 1; });
    const first = lifecycle.close();
    expect(lifecycle.close()).toBe(first);
    await first;
    await lifecycle.close();
    expect(runs).toBe(1);
    expect(() => lifecycle.defer('late', () => undefined)).toThrow(/already closing/);
  });

  it('unwinds a failed start in reverse, rethrows its error, and is never ready', async () => {
    const ran: string[] = [];
    const lifecycle = createLifecycle({ logger });
    const start = lifecycle.start(async () => {
      lifecycle.defer('database', () => { ran.push('database'); });
      // A close that fails while unwinding does not hide the start's own error.
      lifecycle.defer('grpc', () => { ran.push('grpc'); throw new Error('grpc close failed'); });
      lifecycle.defer('http', () => { ran.push('http'); });
      throw new Error('port taken');
    });
    await expect(start).rejects.toThrow('port taken');
    expect(ran).toEqual(['http', 'grpc', 'database']);
    expect([lifecycle.isReady(), lifecycle.isClosing()]).toEqual([false, true]);
  });

});
