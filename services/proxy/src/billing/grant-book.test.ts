import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '@gateway/logger';
import type { AcquireGrantAnswer, AcquireGrantOrder, AdjustGrantAnswer, AdjustGrantOrder } from '../domain/ledger-port.ts';
import type { Carve } from './grant.ts';
import { GrantBook, type GrantBookOptions } from './grant-book.ts';

type GrantLedger = GrantBookOptions['ledger'];

/** A grant ledger that grants min(want, what a test allows) and keeps each grant's hold, µ₹, as the ledger would. */
class ModelLedger implements GrantLedger {
  readonly acquires: AcquireGrantOrder[] = [];
  readonly adjusts: AdjustGrantOrder[] = [];
  /** What each grant holds at the ledger, µ₹. */
  readonly held = new Map<string, bigint>();
  /** Most one grant may hold (0: NOT_GRANTED). */
  grantableMicros = 1_000_000n;
  /** Answers of acquireGrant wait for this when set (a slow ledger). */
  gate: Promise<void> | undefined;

  async acquireGrant(order: AcquireGrantOrder): Promise<AcquireGrantAnswer> {
    this.acquires.push(order);
    await this.gate;
    const granted = order.wantMicros < this.grantableMicros ? order.wantMicros : this.grantableMicros;
    if (granted < order.minMicros) return { outcome: 'not_granted', grantedMicros: 0n, detail: '' };
    this.held.set(order.grantId, granted);
    return { outcome: 'ok', grantedMicros: granted, detail: '' };
  }

  async adjustGrant(order: AdjustGrantOrder): Promise<AdjustGrantAnswer> {
    this.adjusts.push(order);
    const held = this.held.get(order.grantId);
    if (held === undefined) return { outcome: 'already_resolved', remainingMicros: 0n, recalled: false, detail: '' };
    const returned = order.close ? held : (order.returnMicros < held ? order.returnMicros : held);
    if (order.close) this.held.delete(order.grantId);
    else this.held.set(order.grantId, held - returned);
    return { outcome: 'ok', remainingMicros: held - returned, recalled: false, detail: '' };
  }

  /** A carved Settle applied at the ledger: the cost comes out of the grant's hold (the rest from available). */
  applySettle(grantId: string, costMicros: bigint): void {
    const held = this.held.get(grantId);
    if (held !== undefined) this.held.set(grantId, costMicros < held ? held - costMicros : 0n);
  }
}

const silent = createLogger('proxy', 'silent', new Writable({ write(_chunk, _encoding, done) { done(); } }));

function bookWith(ledger: ModelLedger, clock: { nowMs: number }, overrides: Partial<ConstructorParameters<typeof GrantBook>[0]> = {}): GrantBook {
  return new GrantBook({
    ledger, logger: silent, ownerId: 'proxy-a', ttlMs: 15_000, windowMs: 2_000, idleReturnMs: 2_000, checkpointIntervalMs: 2_000,
    tickMs: 0, now: () => clock.nowMs, ...overrides,
  });
}

const org = 'org';
const project = 'org-project';
const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('GrantBook: carving Reserves from credit grants in memory', () => {
  it('asks for the next grant in the background once three quarters are carved, so steady traffic never waits for an AcquireGrant', async () => {
    const ledger = new ModelLedger();
    const clock = { nowMs: 1_000 };
    const book = bookWith(ledger, clock);
    await book.acquireAndCarve(org, project, 'commercial', 100n); // grant of 400, U 300
    expect(book.tryCarve(org, project, 'commercial', 100n)).toBeDefined(); // U 200: half carved, no renewal yet
    expect(ledger.acquires).toHaveLength(1);
    expect(book.tryCarve(org, project, 'commercial', 150n)).toBeDefined(); // U 50 < 400 / 4: renewal starts
    expect(ledger.acquires).toHaveLength(2);
    expect(book.tryCarve(org, project, 'commercial', 10n)).toBeDefined(); // still carved from the old grant meanwhile, and no second renewal
    expect(ledger.acquires).toHaveLength(2);
    await settled();
    // The new grant is current; the old one carves nothing more and keeps its carves until they settle.
    const carve = book.tryCarve(org, project, 'commercial', 100n)!;
    expect(carve.grantId).toBe(ledger.acquires[1]!.grantId);
    expect(book.grants().map((grant) => grant.state)).toEqual(['draining', 'active']);
  });

  it('acquires once for the first Reserve (a few Reserves\' worth), then carves synchronously with exact bigint arithmetic', async () => {
    const ledger = new ModelLedger();
    const clock = { nowMs: 1_000 };
    const book = bookWith(ledger, clock);
    expect(book.tryCarve(org, project, 'commercial', 100n)).toBeUndefined();
    const first = await book.acquireAndCarve(org, project, 'commercial', 100n);
    expect(ledger.acquires).toHaveLength(1);
    expect(ledger.acquires[0]).toMatchObject({ organisationId: org, projectId: project, billingMode: 'commercial', minMicros: 100n, wantMicros: 400n, ttlMs: 15_000, ownerId: 'proxy-a' });
    expect(first?.amountMicros).toBe(100n);
    const second = book.tryCarve(org, project, 'commercial', 250n)!;
    expect(book.grants()[0]).toMatchObject({ uncarvedMicros: 50n, outstanding: 2 });
    // It does not fit: no carve, U unchanged.
    expect(book.tryCarve(org, project, 'commercial', 51n)).toBeUndefined();
    book.release(second);
    expect(book.grants()[0]).toMatchObject({ uncarvedMicros: 300n, outstanding: 1 });
    book.settleSent(first!, 37n);
    expect(book.grants()[0]).toMatchObject({ uncarvedMicros: 363n, outstanding: 0, settlesInFlight: 1 });
    book.settleAnswered(first!);
    expect(book.grants()[0]).toMatchObject({ uncarvedMicros: 363n, outstanding: 0, settlesInFlight: 0 });
    // Releasing or settling twice changes nothing.
    book.release(second);
    book.settleSent(first!, 37n);
    expect(book.grants()[0]!.uncarvedMicros).toBe(363n);
    expect(ledger.held.get(first!.grantId)).toBe(400n);
  });

  it('shares one AcquireGrant between every request waiting on the same key', async () => {
    const ledger = new ModelLedger();
    let open = () => {};
    ledger.gate = new Promise((resolve) => { open = resolve; });
    const book = bookWith(ledger, { nowMs: 0 });
    const waiting = Array.from({ length: 4 }, () => book.acquireAndCarve(org, project, 'commercial', 100n));
    open();
    const carves = await Promise.all(waiting);
    expect(ledger.acquires).toHaveLength(1);
    expect(carves.every((carve) => carve !== undefined)).toBe(true);
    expect(book.grants()[0]).toMatchObject({ uncarvedMicros: 0n, outstanding: 4 });
  });

  it('sizes a grant by the recent spend of the project over the window', async () => {
    const ledger = new ModelLedger();
    ledger.grantableMicros = 10_000_000n;
    const clock = { nowMs: 0 };
    const book = bookWith(ledger, clock);
    // 30 Reserves of 1000 µ₹ over the first second: the exact path counts in the estimate too.
    for (let i = 0; i < 30; i += 1) { clock.nowMs = i * 33; book.tryCarve(org, project, 'commercial', 1_000n); }
    clock.nowMs = 1_000;
    await book.acquireAndCarve(org, project, 'commercial', 1_000n);
    // 30 000 µ₹ over a span of 2 000 + 1 000 ms, times the 2 000 ms window: 20 000 µ₹ (more than 4 Reserves).
    expect(ledger.acquires[0]!.wantMicros).toBe(20_000n);
  });

  it('after NOT_GRANTED takes the exact path for a back-off of one window, then asks again', async () => {
    const ledger = new ModelLedger();
    ledger.grantableMicros = 50n;
    const clock = { nowMs: 0 };
    const book = bookWith(ledger, clock);
    expect(await book.acquireAndCarve(org, project, 'commercial', 100n)).toBeUndefined();
    clock.nowMs = 1_999;
    expect(await book.acquireAndCarve(org, project, 'commercial', 100n)).toBeUndefined();
    expect(ledger.acquires).toHaveLength(1);
    ledger.grantableMicros = 1_000n;
    clock.nowMs = 2_000;
    expect(await book.acquireAndCarve(org, project, 'commercial', 100n)).toBeDefined();
    expect(ledger.acquires).toHaveLength(2);
  });

  it('on a recall returns U at once, carves nothing more, and closes once its carves are settled and answered', async () => {
    const ledger = new ModelLedger();
    const book = bookWith(ledger, { nowMs: 0 });
    const carve = (await book.acquireAndCarve(org, project, 'commercial', 100n))!;
    book.recall([carve.grantId, 'grant_unknown_here']);
    await settled();
    expect(ledger.adjusts).toEqual([expect.objectContaining({ grantId: carve.grantId, returnMicros: 300n, close: false, reason: 'recalled' })]);
    expect(ledger.held.get(carve.grantId)).toBe(100n);
    expect(book.tryCarve(org, project, 'commercial', 1n)).toBeUndefined();
    book.settleSent(carve, 60n);
    ledger.applySettle(carve.grantId, 60n);
    expect(ledger.adjusts).toHaveLength(1); // still a Settle in flight
    book.settleAnswered(carve);
    await settled();
    expect(ledger.adjusts.at(-1)).toMatchObject({ grantId: carve.grantId, close: true, reason: 'recalled' });
    expect(ledger.held.has(carve.grantId)).toBe(false);
    expect(book.grants()).toEqual([]);
  });

  it('answers a recall once, also for a replaced grant and when nothing is left uncarved (a return of 0)', async () => {
    const ledger = new ModelLedger();
    const book = bookWith(ledger, { nowMs: 0 });
    const first = (await book.acquireAndCarve(org, project, 'commercial', 100n))!;
    const all = [first, book.tryCarve(org, project, 'commercial', 100n)!, book.tryCarve(org, project, 'commercial', 100n)!];
    all.push(book.tryCarve(org, project, 'commercial', 100n)!); // U 0: the background renewal replaced it
    await settled();
    expect(book.grants().map((grant) => grant.state)).toEqual(['draining', 'active']);
    book.recall([first.grantId]);
    book.recall([first.grantId]); // pushed again (another ledger replica): answered once
    await settled();
    expect(ledger.adjusts).toEqual([expect.objectContaining({ grantId: first.grantId, returnMicros: 0n, close: false, extendTtlMs: 0, reason: 'recalled' })]);
    for (const carve of all) book.release(carve);
    book.tick();
    await settled();
    expect(ledger.adjusts.at(-1)).toMatchObject({ grantId: first.grantId, close: true });
    expect(ledger.held.has(first.grantId)).toBe(false);
  });

  it('closes a grant idle for PROXY_GRANT_IDLE_RETURN_MS with nothing outstanding, and not one in use', async () => {
    const ledger = new ModelLedger();
    const clock = { nowMs: 0 };
    const book = bookWith(ledger, clock);
    const carve = (await book.acquireAndCarve(org, project, 'commercial', 100n))!;
    clock.nowMs = 5_000;
    book.tick();
    await settled();
    expect(ledger.adjusts).toEqual([]); // a carve is outstanding
    book.settleSent(carve, 100n);
    book.tick();
    await settled();
    expect(ledger.adjusts).toEqual([]); // its Settle is not answered yet
    book.settleAnswered(carve);
    const second = bookWith(ledger, clock);
    const fresh = (await second.acquireAndCarve(org, project, 'commercial', 100n))!;
    second.release(fresh);
    clock.nowMs = 6_999;
    second.tick();
    await settled();
    expect(ledger.adjusts).toEqual([]); // carved from 1 999 ms ago
    book.tick();
    await settled();
    expect(ledger.adjusts).toEqual([expect.objectContaining({ grantId: carve.grantId, close: true, reason: 'idle' })]);
    expect(book.grants()).toEqual([]);
    clock.nowMs = 7_000;
    second.tick();
    await settled();
    expect(ledger.adjusts.at(-1)).toEqual(expect.objectContaining({ grantId: fresh.grantId, close: true, reason: 'idle' }));
  });

  it('extends a grant in use when a third of its TTL is left, and stops carving from one near its deadline', async () => {
    const ledger = new ModelLedger();
    const clock = { nowMs: 0 };
    const book = bookWith(ledger, clock);
    const carve = (await book.acquireAndCarve(org, project, 'commercial', 100n))!;
    clock.nowMs = 9_999;
    book.tick();
    expect(ledger.adjusts).toEqual([]);
    clock.nowMs = 10_000;
    book.tick();
    book.tick(); // one extension in flight at a time
    await settled();
    expect(ledger.adjusts).toEqual([expect.objectContaining({ grantId: carve.grantId, extendTtlMs: 15_000, close: false, returnMicros: 0n, reason: 'extend' })]);
    // Extended to 10 000 + 15 000: carving goes on until a quarter of the TTL is left.
    clock.nowMs = 21_000;
    expect(book.tryCarve(org, project, 'commercial', 100n)).toBeDefined();
    const withoutExtension = bookWith(new ModelLedger(), clock);
    await withoutExtension.acquireAndCarve(org, project, 'commercial', 100n);
    clock.nowMs += 11_251;
    expect(withoutExtension.tryCarve(org, project, 'commercial', 100n)).toBeUndefined();
  });

  it('promotes a carved stream after one checkpoint interval; a promoted carve returns nothing to U', async () => {
    const ledger = new ModelLedger();
    const clock = { nowMs: 0 };
    const book = bookWith(ledger, clock);
    const carve = (await book.acquireAndCarve(org, project, 'commercial', 100n))!;
    expect(book.promotionDue(carve)).toBe(false);
    clock.nowMs = 2_000;
    expect(book.promotionDue(carve)).toBe(true);
    book.promotionSent(carve);
    book.promotionAnswered(carve, 'unknown');
    expect(book.promotionDue(carve)).toBe(true); // sent again at the next checkpoint
    book.promotionSent(carve);
    book.promotionAnswered(carve, 'held');
    expect(book.grants()[0]).toMatchObject({ uncarvedMicros: 300n, outstanding: 0 });
    book.settleSent(carve, 10n);
    expect(book.grants()[0]!.uncarvedMicros).toBe(300n);
  });

  it('a recall pushed before its AcquireGrant was answered takes effect when the grant arrives: nothing is carved from it', async () => {
    const ledger = new ModelLedger();
    const book = bookWith(ledger, { nowMs: 0 });
    let open!: () => void;
    ledger.gate = new Promise((resolve) => { open = resolve; });
    const waiting = book.acquireAndCarve(org, project, 'commercial', 100n);
    // The ledger held the grant, and a budget change recalled it before its answer reached the book.
    book.recall([ledger.acquires[0]!.grantId]);
    open();
    expect(await waiting).toBeUndefined();
    await settled();
    expect(book.tryCarve(org, project, 'commercial', 1n)).toBeUndefined();
    expect(ledger.adjusts).toEqual([expect.objectContaining({ grantId: ledger.acquires[0]!.grantId, close: true, reason: 'recalled' })]);
    expect(ledger.held.size).toBe(0);
  });

  it('carves nothing more from the grants of an Operate stream that ended (the ledger closes them when it sees the owner gone)', async () => {
    const ledger = new ModelLedger();
    const book = bookWith(ledger, { nowMs: 0 });
    const carve = (await book.acquireAndCarve(org, project, 'commercial', 100n))!;
    let open!: () => void;
    ledger.gate = new Promise((resolve) => { open = resolve; });
    const renewing = book.acquireAndCarve(org, 'other-project', 'commercial', 100n);
    book.streamEnded();
    // An AcquireGrant sent on the ended stream, answered after: that grant is given back, not carved.
    open();
    expect(await renewing).toBeUndefined();
    expect(book.tryCarve(org, project, 'commercial', 1n)).toBeUndefined();
    await settled();
    // The ended stream's grants answer as recalled: U returned, closed once the carve in flight settles.
    expect(ledger.adjusts.map((order) => [order.grantId, order.close, order.returnMicros])).toEqual(expect.arrayContaining([
      [carve.grantId, false, 300n], [ledger.acquires[1]!.grantId, true, 0n],
    ]));
    book.settleSent(carve, 100n);
    book.settleAnswered(carve);
    await settled();
    expect(ledger.held.size).toBe(0);
    // A new stream: grants again.
    expect(await book.acquireAndCarve(org, project, 'commercial', 100n)).toBeDefined();
  });

  it('closes every grant at shutdown and carves nothing after', async () => {
    const ledger = new ModelLedger();
    const book = bookWith(ledger, { nowMs: 0 });
    await book.acquireAndCarve(org, project, 'commercial', 100n);
    await book.acquireAndCarve(org, 'other-project', 'internal', 100n);
    await book.closeAll();
    expect(ledger.adjusts.map((order) => [order.close, order.reason])).toEqual([[true, 'shutdown'], [true, 'shutdown']]);
    expect(ledger.held.size).toBe(0);
    expect(book.tryCarve(org, project, 'commercial', 1n)).toBeUndefined();
    expect(await book.acquireAndCarve(org, project, 'commercial', 1n)).toBeUndefined();
  });

  it('never lets U exceed what the ledger holds for the grant, under random interleavings of carves, releases, settles, promotions and recalls', async () => {
    // A seeded generator: the same interleavings every run, and many of them.
    let seed = 12_345;
    const random = (n: number) => { seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648; return seed % n; };
    for (let run = 0; run < 200; run += 1) {
      const ledger = new ModelLedger();
      ledger.grantableMicros = BigInt(500 + random(5_000));
      const clock = { nowMs: 0 };
      const book = bookWith(ledger, clock);
      const live: Carve[] = [];
      const sent: Array<{ carve: Carve; costMicros: bigint; applied: boolean; promoted: boolean }> = [];
      const check = () => {
        for (const grant of book.grants()) {
          const held = ledger.held.get(grant.grantId) ?? 0n;
          expect(grant.uncarvedMicros <= held, `run ${run}: U ${grant.uncarvedMicros} > held ${held}`).toBe(true);
        }
      };
      for (let step = 0; step < 60; step += 1) {
        clock.nowMs += random(300);
        const amount = BigInt(1 + random(400));
        switch (random(7)) {
          case 0: case 1: {
            const carve = book.tryCarve(org, project, 'commercial', amount) ?? await book.acquireAndCarve(org, project, 'commercial', amount);
            if (carve !== undefined) live.push(carve);
            break;
          }
          case 2: {
            const carve = live.splice(random(live.length + 1), 1)[0];
            if (carve !== undefined) book.release(carve);
            break;
          }
          case 3: {
            const carve = live.splice(random(live.length + 1), 1)[0];
            // Up to a little past the carve (BOUNDED_OVERRUN: one chunk).
            if (carve !== undefined) {
              const costMicros = BigInt(random(Number(carve.amountMicros) + 20));
              const promoted = carve.state === 'promoted';
              book.settleSent(carve, costMicros);
              sent.push({ carve, costMicros, applied: false, promoted });
            }
            break;
          }
          case 4: {
            const entry = sent.find((candidate) => !candidate.applied);
            if (entry !== undefined) {
              entry.applied = true;
              // A promoted carve's Settle is its own reservation's: the grant's hold is not touched.
              if (!entry.promoted) ledger.applySettle(entry.carve.grantId, entry.costMicros);
              book.settleAnswered(entry.carve);
            }
            break;
          }
          case 5: {
            const carve = live[random(live.length + 1)];
            if (carve !== undefined && book.promotionDue(carve)) {
              book.promotionSent(carve);
              const outcome = (['held', 'refused', 'unknown'] as const)[random(3)]!;
              // A promotion held moves the carve out of the grant's hold into its own reservation.
              if (outcome === 'held') ledger.held.set(carve.grantId, (ledger.held.get(carve.grantId) ?? 0n) - carve.amountMicros);
              book.promotionAnswered(carve, outcome);
            }
            break;
          }
          default:
            if (random(4) === 0) book.recall(book.grants().map((grant) => grant.grantId));
            else book.tick();
        }
        await settled();
        check();
      }
    }
  });
});
