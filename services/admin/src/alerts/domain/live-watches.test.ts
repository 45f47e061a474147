import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Balance, UsageRecord } from '../../common/domain/admin-records.ts';
import { createOrganisationWatches, type LiveLedgerMessage } from './live-watches.ts';

/** An in-memory ledger for the two reads the watches make, counting them. */
function memoryLedger() {
  const balances = new Map<string, Balance>();
  const usage = new Map<string, UsageRecord[]>();
  const calls = { getBalance: 0, listUsage: 0 };
  let failing = false;
  return {
    balances, usage, calls,
    fail(value: boolean) { failing = value; },
    ledger: {
      async getBalance(organisationId: string): Promise<Balance> {
        calls.getBalance++;
        if (failing) throw new Error('ledger down');
        return balances.get(organisationId) ?? { organisationId, creditedMicros: 0n, availableMicros: 0n, heldMicros: 0n, debitedMicros: 0n };
      },
      async listUsage(request: { organisationId: string; pageSize: number }) {
        calls.listUsage++;
        return { records: (usage.get(request.organisationId) ?? []).slice(0, request.pageSize), nextPageToken: null };
      },
    },
  };
}

const record = (id: string) => ({ id }) as UsageRecord;

describe('createOrganisationWatches', () => {
  beforeEach(() => { vi.useFakeTimers(); });
  afterEach(() => { vi.useRealTimers(); });

  it('polls once per organisation however many watch it, tells changes only, and stops with the last watcher', async () => {
    const memory = memoryLedger();
    const errors: string[] = [];
    const watches = createOrganisationWatches({ ledger: memory.ledger, pollMs: 100, onPollError: (id) => errors.push(id) });
    const first: LiveLedgerMessage[] = [];
    const second: LiveLedgerMessage[] = [];
    const stopFirst = watches.watch('org_a', (message) => first.push(message));
    await vi.advanceTimersByTimeAsync(0);
    // The first poll runs at once: the state as read, balance and (empty) usage.
    expect(first.map((message) => message.type)).toEqual(['balance', 'usage']);
    expect(memory.calls).toEqual({ getBalance: 1, listUsage: 1 });

    // A second watcher is told the known state at once, without another ledger read.
    const stopSecond = watches.watch('org_a', (message) => second.push(message));
    expect(second.map((message) => message.type)).toEqual(['balance', 'usage']);
    expect(memory.calls.getBalance).toBe(1);

    // Nothing changed: a poll tells nobody anything.
    await vi.advanceTimersByTimeAsync(100);
    expect(memory.calls.getBalance).toBe(2);
    expect(first).toHaveLength(2);

    memory.balances.set('org_a', { organisationId: 'org_a', creditedMicros: 5n, availableMicros: 5n, heldMicros: 0n, debitedMicros: 0n });
    memory.usage.set('org_a', [record('u-2'), record('u-1')]);
    await vi.advanceTimersByTimeAsync(100);
    expect(memory.calls.getBalance).toBe(3);
    expect(first.slice(2)).toEqual([
      { type: 'balance', balance: { organisationId: 'org_a', creditedMicros: 5n, availableMicros: 5n, heldMicros: 0n, debitedMicros: 0n } },
      { type: 'usage', records: [record('u-2'), record('u-1')] },
    ]);
    expect(second.slice(2)).toEqual(first.slice(2));

    // Only the newest record's id counts as a change of usage.
    memory.usage.set('org_a', [record('u-2')]);
    await vi.advanceTimersByTimeAsync(100);
    expect(first).toHaveLength(4);

    stopFirst();
    expect(watches.watchedOrganisations()).toEqual(['org_a']);
    stopSecond();
    expect(watches.watchedOrganisations()).toEqual([]);
    const polls = memory.calls.getBalance;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(memory.calls.getBalance).toBe(polls);
    expect(errors).toEqual([]);
  });

  it('keeps polling through ledger failures, reporting each, and close() stops every loop', async () => {
    const memory = memoryLedger();
    const errors: string[] = [];
    const watches = createOrganisationWatches({ ledger: memory.ledger, pollMs: 100, onPollError: (id) => errors.push(id) });
    const told: LiveLedgerMessage[] = [];
    memory.fail(true);
    watches.watch('org_b', (message) => told.push(message));
    watches.watch('org_c', () => {});
    await vi.advanceTimersByTimeAsync(100);
    expect(errors.filter((id) => id === 'org_b')).toHaveLength(2);
    expect(told).toEqual([]);
    memory.fail(false);
    await vi.advanceTimersByTimeAsync(100);
    expect(told.map((message) => message.type)).toEqual(['balance', 'usage']);

    watches.close();
    expect(watches.watchedOrganisations()).toEqual([]);
    const polls = memory.calls.getBalance;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(memory.calls.getBalance).toBe(polls);
  });
});
