import { describe, expect, it } from 'vitest';
import * as ledger from './gen/gateway/ledger/v1/ledger.ts';
import { ledgerResultNames, resultNamesByValue } from './ledger-result-names.ts';
import { ledgerResultEnums } from './testing/ledger-result-enums.ts';

describe('ledgerResultNames', () => {
  it('names every decided value of every result enum, as the lower-case rest of its proto name, and nothing else', () => {
    const enums = ledgerResultEnums();
    expect(Object.keys(ledgerResultNames).sort()).toEqual([...enums.keys()].sort());
    for (const [operation, members] of enums) {
      const expected = Object.entries(members)
        .filter(([name]) => !name.endsWith('_RESULT_UNSPECIFIED') && name !== 'UNRECOGNIZED')
        .map(([name, value]) => [name.slice(name.indexOf('_RESULT_') + '_RESULT_'.length).toLowerCase(), value]);
      expect(Object.entries(ledgerResultNames[operation as keyof typeof ledgerResultNames]).sort(), operation).toEqual(expected.sort());
    }
  });

  it('reads a table backwards, and gives no name to UNSPECIFIED or an unknown value', () => {
    const names = resultNamesByValue(ledgerResultNames.reserve);
    expect(names.get(ledger.ReserveResult.RESERVE_RESULT_INSUFFICIENT_BALANCE)).toBe('insufficient_balance');
    expect(names.get(ledger.ReserveResult.RESERVE_RESULT_UNSPECIFIED)).toBeUndefined();
    expect(names.get(99)).toBeUndefined();
  });
});
