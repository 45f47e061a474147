import { createLogger } from '@gateway/logger';
import { describe, expect, it, vi } from 'vitest';
import { startPeriodicJob } from './periodic-job.ts';

/** A real logger writing its JSON lines into an array, so tests can read what a failed run logs. */
function capturedLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger('periodic-job-test', 'info', { write: (line: string) => { lines.push(JSON.parse(line) as Record<string, unknown>); } });
  return { logger, lines };
}

/** A promise with its resolve function outside, to hold a fake run open until the test lets it end. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => { open = resolve; });
  return { open, opened };
}

/** Starts `run` every 1 ms (first after `firstDelayMs`) with a captured logger. */
function startTestJob(name: string, run: () => Promise<unknown>, firstDelayMs = 0) {
  const { logger, lines } = capturedLogger();
  const job = startPeriodicJob({ name, firstDelayMs, intervalMs: 1, logger, failureMessage: `${name} pass failed; retried at the next interval`, run });
  return { job, lines };
}

describe('startPeriodicJob', () => {
  it('runs again and again, never two runs at once', async () => {
    let inFlight = 0;
    let mostInFlight = 0;
    let runs = 0;
    const { job } = startTestJob('overlap', async () => {
      inFlight += 1;
      mostInFlight = Math.max(mostInFlight, inFlight);
      // Longer than the interval, so an overlapping schedule would start a second run meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 5));
      inFlight -= 1;
      runs += 1;
    });
    await vi.waitFor(() => expect(runs).toBeGreaterThanOrEqual(5));
    await job.close();
    expect(mostInFlight).toBe(1);
  });

  it('close waits for the run in flight and no run starts after it', async () => {
    const release = gate();
    let started = 0;
    let finished = 0;
    const { job } = startTestJob('closing', async () => {
      started += 1;
      await release.opened;
      finished += 1;
    });
    await vi.waitFor(() => expect(started).toBe(1));
    let closed = false;
    const closing = job.close().then(() => { closed = true; });
    // Give close every chance to resolve early: it must still be waiting on the held run.
    await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(false);
    release.open();
    await closing;
    expect(finished).toBe(1);
    expect(job.close()).toBe(job.close());
    // A further interval's worth of event-loop turns passes without a new run.
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(started).toBe(1);
  });

  it('closing before the first run means it never runs', async () => {
    let started = 0;
    const { job } = startTestJob('never', async () => { started += 1; }, 1);
    await job.close();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(started).toBe(0);
  });

  it('logs a failed run with its name and goes on to the next run', async () => {
    let runs = 0;
    const { job, lines } = startTestJob('flaky', async () => {
      runs += 1;
      if (runs === 1) throw new Error('first run broke');
    });
    await vi.waitFor(() => expect(runs).toBeGreaterThanOrEqual(3));
    await job.close();
    const warnings = lines.filter((line) => line.msg === 'flaky pass failed; retried at the next interval');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, worker: 'flaky', err: { message: 'first run broke' } });
  });
});
