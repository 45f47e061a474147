import { describe, expect, it } from 'vitest';
import { classBreakdown, tokenClassLabel } from './token-classes.ts';

describe('classBreakdown', () => {
  it('sums classes across rows exactly and keeps the requests without classes apart, with their cost', () => {
    const breakdown = classBreakdown([
      {
        cost_micros: '9007199254741000', provider_cost_micros: '900', unclassified_requests: 1,
        token_classes: [
          { class: 'output', tokens: 10, cost_micros: '9007199254740993', provider_cost_micros: '500' },
          { class: 'cached_input', tokens: 40, cost_micros: '3', provider_cost_micros: '100' },
        ],
      },
      {
        cost_micros: '12', provider_cost_micros: '6', unclassified_requests: 0,
        token_classes: [{ class: 'cached_input', tokens: 2, cost_micros: '12', provider_cost_micros: '6' }],
      },
    ]);
    expect(breakdown).toEqual({
      classes: [
        { class: 'cached_input', tokens: '42', costMicros: '15', providerCostMicros: '106' },
        { class: 'output', tokens: '10', costMicros: '9007199254740993', providerCostMicros: '500' },
      ],
      unclassified: { requests: '1', costMicros: '4', providerCostMicros: '300' },
    });
  });

  it('shows no unclassified cost when every request carried classes, and nothing for no rows', () => {
    expect(classBreakdown([])).toEqual({ classes: [], unclassified: { requests: '0', costMicros: '0', providerCostMicros: '0' } });
    expect(tokenClassLabel('cache_write_1h')).toBe('cache write 1h');
  });
});
