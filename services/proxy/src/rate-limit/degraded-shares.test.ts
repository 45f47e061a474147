import { describe, expect, it } from 'vitest';
import { rpmWindowMs } from '../domain/rate-limit.ts';
import { DegradedShares } from './degraded-shares.ts';

/** A book on a clock the test moves. */
function book(replicas: number | undefined, boundMs = 300_000) {
  const clock = { now: 1_000 };
  return { clock, shares: new DegradedShares({ replicas, boundMs, now: () => clock.now }) };
}

const allowed = (shares: DegradedShares, times: number, limit: number) =>
  Array.from({ length: times }, () => shares.decide('org', limit)?.allowed);

describe('DegradedShares', () => {
  it('admits floor(limit / replicas) a minute per organisation, then refuses until the window moves', () => {
    const { clock, shares } = book(3);
    expect(allowed(shares, 4, 10)).toEqual([true, true, true, false]);
    expect(shares.decide('other', 10)?.allowed).toBe(true);
    clock.now += rpmWindowMs;
    expect(allowed(shares, 4, 10)).toEqual([true, true, true, false]);
  });

  it('counts what the shared pool admitted in the last minute against the share', () => {
    const { shares } = book(2);
    shares.admittedShared('org');
    shares.admittedShared('org');
    expect(allowed(shares, 4, 8)).toEqual([true, true, false, false]);
  });

  it('refuses a limit below the replica count: every share is 0', () => {
    const { shares } = book(4);
    expect(allowed(shares, 1, 3)).toEqual([false]);
  });

  it('is off without a replica count, and ends at its bound until the pool answers again', () => {
    expect(book(undefined).shares.decide('org', 10)).toBeUndefined();
    const { clock, shares } = book(2, 5_000);
    expect(shares.mode()).toBe('shared');
    expect(shares.decide('org', 10)?.allowed).toBe(true);
    expect(shares.mode()).toBe('degraded');
    clock.now += 5_000;
    expect(shares.decide('org', 10)).toBeUndefined();
    expect(shares.mode()).toBe('failing_closed');
    shares.sharedPoolAnswered();
    expect(shares.mode()).toBe('shared');
    expect(shares.decide('org', 10)?.allowed).toBe(true);
  });

  it('hands the unrecorded admissions to one lease with their ages, and takes them back when it fails', () => {
    const { clock, shares } = book(1);
    shares.decide('org', 10);
    clock.now += 250;
    shares.decide('org', 10);
    clock.now += 100;
    const taken = shares.takeUnrecorded('org');
    expect(taken.ages).toEqual([350, 100]);
    expect(shares.takeUnrecorded('org').ages).toEqual([]);
    taken.restore();
    expect(shares.takeUnrecorded('org').ages).toEqual([350, 100]);
    clock.now += rpmWindowMs;
    shares.sweep();
    expect(shares.takeUnrecorded('org').ages).toEqual([]);
  });
});
