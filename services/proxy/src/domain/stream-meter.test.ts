import { describe, expect, it } from 'vitest';
import { costMicros, reserveMicros, usageCostMicros } from './pricing.ts';
import { StreamMeter, type StreamMeterOptions } from './stream-meter.ts';
import { countTextTokens } from './token-estimate.ts';
import type { GatewayModelEntry } from './config-snapshot.ts';

const tokenizer = 'cl100k_base' as const;
// 1 µ₹ per prompt token and 2 µ₹ per completion token: every cost below is easy to check by hand.
const model = {
  tokenizer, inputPriceMicrosPerMtok: 1_000_000n, outputPriceMicrosPerMtok: 2_000_000n,
  providerInputCostMicrosPerMtok: 500_000n, providerOutputCostMicrosPerMtok: 1_000_000n,
} as const;
const promptTokens = 10;

/** A meter whose Reserve covers the prompt and `outputTokens` completion tokens. */
function meterFor(outputTokens: number, options: Partial<StreamMeterOptions> = {}): StreamMeter {
  return new StreamMeter({ model, promptTokens, reserveMicros: 10n + 2n * BigInt(outputTokens), checkpointIntervalMs: 1_000, ...options });
}

// Each of these is one token in cl100k_base.
const words = [' one', ' two', ' three', ' four', ' five', ' six', ' seven', ' eight'];
const tokensOf = (text: string) => countTextTokens(text, tokenizer);

describe('StreamMeter: how a stream is billed (NOTHING_FREE)', () => {
  it('bills the upstream usage of a stream that completed with it', () => {
    for (const word of words) expect(tokensOf(word)).toBe(1);
    const meter = meterFor(64);
    for (const word of words.slice(0, 3)) expect(meter.deliver(word, false)).toBe(true);
    expect(meter.deliver('', true)).toBe(true);
    meter.reportUsage({ promptTokens: 12, completionTokens: 3 });
    expect(meter.endingAtClose()).toBe('completed');
    expect(meter.bill('completed')).toEqual({ usage: { promptTokens: 12, completionTokens: 3 }, source: 'upstream' });
  });

  it('holds a completed stream to its Reserve when the upstream counts more than it covers: the estimate billed, what it counted kept as produced (BOUNDED_OVERRUN)', () => {
    const meter = meterFor(8); // Reserve 10 + 16 = 26 µ₹
    for (const word of words.slice(0, 3)) expect(meter.deliver(word, false)).toBe(true);
    expect(meter.deliver('', true)).toBe(true);
    // The upstream bills a prompt far beyond the gateway's estimate of 10 (say, a schema it counts): 500 + 6 µ₹ > 26 µ₹.
    meter.reportUsage({ promptTokens: 500, completionTokens: 3 });
    expect(meter.bill('completed')).toEqual({
      usage: { promptTokens: 10, completionTokens: 3 }, source: 'gateway_estimate', producedUsage: { promptTokens: 500, completionTokens: 3 },
    });
    // Exactly at the Reserve is still the upstream's figure: 20 + 6 = 26 µ₹.
    const atReserve = meterFor(8);
    atReserve.deliver(words[0]!, true);
    atReserve.reportUsage({ promptTokens: 20, completionTokens: 3 });
    expect(atReserve.bill('completed')).toEqual({ usage: { promptTokens: 20, completionTokens: 3 }, source: 'upstream' });
  });

  it('bills its own estimate when the upstream sent no usage: the prompt estimate and the delivered text counted once as a whole', () => {
    const meter = meterFor(64);
    // "hello" is one token, its halves are two: the whole text is counted, not the sum of chunks.
    expect(tokensOf('hel') + tokensOf('lo')).toBe(2);
    expect(tokensOf('hello')).toBe(1);
    meter.deliver('hel', false);
    meter.deliver('lo', true);
    expect(meter.bill('completed')).toEqual({ usage: { promptTokens, completionTokens: 1 }, source: 'gateway_estimate' });
    // A completed stream with nothing in it still bills its prompt estimate.
    expect(meterFor(64).bill('completed')).toEqual({ usage: { promptTokens, completionTokens: 0 }, source: 'gateway_estimate' });
  });

  it('refuses the chunk that would pass the Reserve and bills what was delivered, within it (BOUNDED_OVERRUN)', () => {
    const meter = meterFor(3); // Reserve 16 µ₹: the prompt (10) and three completion tokens (6)
    expect(words.slice(0, 3).map((word) => meter.deliver(word, false))).toEqual([true, true, true]);
    expect(meter.deliver(words[3]!, false)).toBe(false);
    // An empty delta costs nothing and may still go (a role chunk, a finish reason).
    expect(meter.deliver('', false)).toBe(true);
    // Upstream usage counts what the upstream produced, not what the client got: a cost stop bills the delivered text.
    meter.reportUsage({ promptTokens: 10, completionTokens: 40 });
    const billed = meter.bill('cost_stop');
    expect(billed).toEqual({ usage: { promptTokens, completionTokens: 3 }, source: 'gateway_estimate' });
    expect(usageCostMicros(billed.usage, model as unknown as GatewayModelEntry).costMicros).toBe(16n);
  });

  it('bills what was delivered when the client disconnects, and nothing when nothing was', () => {
    expect(meterFor(64).bill('client_closed')).toEqual({ usage: { promptTokens: 0, completionTokens: 0 }, source: 'gateway_estimate' });
    const meter = meterFor(64);
    meter.deliver(words[0]!, false);
    meter.deliver(words[1]!, false);
    expect(meter.delivered).toBe(true);
    expect(meter.bill('client_closed')).toEqual({ usage: { promptTokens, completionTokens: 2 }, source: 'gateway_estimate' });
    meter.reportUsage({ promptTokens: 11, completionTokens: 5 });
    expect(meter.bill('client_closed')).toEqual({ usage: { promptTokens: 11, completionTokens: 5 }, source: 'upstream' });
  });

  it('bills what was delivered when the upstream fails mid-stream, and a close without a finish reason is a failure', () => {
    const meter = meterFor(64);
    meter.deliver(words[0]!, false);
    meter.deliver(words[1]!, false);
    expect(meter.endingAtClose()).toBe('upstream_failed');
    for (const ending of ['upstream_failed', 'upstream_timeout', 'shutdown'] as const) {
      expect(meter.bill(ending)).toEqual({ usage: { promptTokens, completionTokens: 2 }, source: 'gateway_estimate' });
    }
    // Failed before the first chunk: nothing reached the client, nothing is billed (zero usage is still settled).
    expect(meterFor(64).bill('upstream_timeout')).toEqual({ usage: { promptTokens: 0, completionTokens: 0 }, source: 'gateway_estimate' });
  });

  it('meters INTERNAL_MODE alike: the Reserve still bounds the stream (PROJECT_BUDGET applies in both modes) and the usage is billed at customer prices', () => {
    // planChat computes the same Reserve for an internal organisation; the ledger holds nothing for it.
    const amount = reserveMicros(promptTokens, 2, model as unknown as GatewayModelEntry);
    expect(amount).toBe(costMicros(promptTokens, model.inputPriceMicrosPerMtok) + costMicros(2, model.outputPriceMicrosPerMtok));
    const meter = new StreamMeter({ model, promptTokens, reserveMicros: amount, checkpointIntervalMs: 1_000 });
    expect(words.slice(0, 3).map((word) => meter.deliver(word, false))).toEqual([true, true, false]);
    const billed = meter.bill('cost_stop');
    expect(billed.usage).toEqual({ promptTokens, completionTokens: 2 });
    expect(usageCostMicros(billed.usage, model as unknown as GatewayModelEntry)).toEqual({ costMicros: 14n, providerCostMicros: 7n });
  });
});

describe('StreamMeter: checkpoints (EXPIRY)', () => {
  it('asks for the first checkpoint with the first content, then one per interval, never two in flight', () => {
    const meter = meterFor(64);
    expect(meter.checkpointDue(0)).toBeUndefined();
    meter.deliver('', false); // a role chunk: nothing to record yet
    expect(meter.checkpointDue(0)).toBeUndefined();
    meter.deliver(words[0]!, false);
    expect(meter.checkpointDue(5_000)).toEqual({ sequence: 1n, usage: { promptTokens, completionTokens: 1 } });
    meter.deliver(words[1]!, false);
    expect(meter.checkpointDue(7_000)).toBeUndefined(); // the first is still in flight
    meter.checkpointSettled();
    expect(meter.checkpointDue(5_999)).toBeUndefined(); // within the interval
    expect(meter.checkpointDue(6_000)).toEqual({ sequence: 2n, usage: { promptTokens, completionTokens: 2 } });
  });
});
