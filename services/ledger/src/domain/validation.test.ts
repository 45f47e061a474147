import { describe, expect, it } from 'vitest';
import {
  idProblem, nonNegativeAmountProblem, optionalIdProblem, positiveAmountProblem, problemsOf, reasonProblem,
  reserveTtlProblem,
} from './validation.ts';
import { maxAmountMicros } from './ledger-types.ts';

describe('validation', () => {
  it('accepts ids of 1..128 printable ASCII characters and names the field of a bad one', () => {
    expect(idProblem('organisation_id', 'org_01HZX-9.a:b/c')).toBeUndefined();
    expect(idProblem('organisation_id', 'x'.repeat(128))).toBeUndefined();
    expect(idProblem('organisation_id', '')).toBe('organisation_id must not be empty');
    expect(idProblem('organisation_id', 'x'.repeat(129))).toBe('organisation_id must be at most 128 characters');
    expect(idProblem('project_id', 'a b')).toBe('project_id must be printable ASCII without spaces');
    expect(idProblem('project_id', 'café')).toBe('project_id must be printable ASCII without spaces');
    expect(optionalIdProblem('request_id', '')).toBeUndefined();
    expect(optionalIdProblem('request_id', 'a\nb')).toBeDefined();
  });

  it('bounds amounts at both ends', () => {
    expect(positiveAmountProblem('amount_micros', 1n)).toBeUndefined();
    expect(positiveAmountProblem('amount_micros', maxAmountMicros)).toBeUndefined();
    expect(positiveAmountProblem('amount_micros', 0n)).toBe('amount_micros must be positive');
    expect(positiveAmountProblem('amount_micros', maxAmountMicros + 1n)).toBe(`amount_micros must be at most ${2n ** 62n}`);
    expect(nonNegativeAmountProblem('cost_micros', 0n)).toBeUndefined();
    expect(nonNegativeAmountProblem('cost_micros', -1n)).toBe('cost_micros must not be negative');
    expect(nonNegativeAmountProblem('cost_micros', maxAmountMicros + 1n)).toBeDefined();
  });

  it('keeps Reserve lifetimes between 1 s and 24 h', () => {
    expect(reserveTtlProblem('ttl_ms', 1_000n)).toBeUndefined();
    expect(reserveTtlProblem('ttl_ms', 86_400_000n)).toBeUndefined();
    expect(reserveTtlProblem('ttl_ms', 999n)).toBeDefined();
    expect(reserveTtlProblem('ttl_ms', 86_400_001n)).toBeDefined();
  });

  it('allows free text of up to 500 characters without control characters', () => {
    expect(reasonProblem('reason', '')).toBeUndefined();
    expect(reasonProblem('reason', 'manual: welcome credit ₹50 🎉')).toBeUndefined();
    expect(reasonProblem('reason', 'r'.repeat(501))).toBe('reason must be at most 500 characters');
    expect(reasonProblem('reason', 'tab\there')).toBe('reason must not contain control characters');
    expect(problemsOf(undefined, 'a', undefined, 'b')).toEqual(['a', 'b']);
  });
});
