import { describe, expect, it } from 'vitest';
import { billingProfileProblems } from './billing-profile.ts';
import { placeOfSupplyText } from './gst.ts';

describe('GST state codes on billing profiles and documents', () => {
  it('accepts every code in force as a place of supply, 96 (a recipient abroad) included', () => {
    for (const stateCode of ['01', '07', '24', '26', '27', '29', '36', '37', '38', '96', '97']) {
      expect(billingProfileProblems({ stateCode, gstin: null, country: stateCode === '96' ? 'Singapore' : null }), stateCode).toEqual([]);
    }
  });

  it('refuses retired codes, 99 and codes that are none, saying which codes are in force', () => {
    for (const stateCode of ['25', '28', '99', '00', '39', '95', '98']) {
      const problems = billingProfileProblems({ stateCode, gstin: null });
      expect(problems, stateCode).toHaveLength(1);
      expect(problems[0]).toMatchObject({ field: 'state_code' });
      expect(problems[0]!.problem).toMatch(/01 to 24, 26, 27, 29 to 38, 96 or 97/);
    }
    expect(billingProfileProblems({ stateCode: '25', gstin: null })[0]!.problem).toMatch(/26/);
  });

  it('names every known code on documents, retired ones included (documents issued with them keep them)', () => {
    expect(placeOfSupplyText('26')).toBe('Dadra and Nagar Haveli and Daman and Diu (26)');
    expect(placeOfSupplyText('25')).toBe('Daman and Diu (before the 2020 merger) (25)');
    expect(placeOfSupplyText('28')).toBe('Andhra Pradesh (before the 2014 division) (28)');
    expect(placeOfSupplyText('38')).toBe('Ladakh (38)');
    expect(placeOfSupplyText('96')).toBe('Foreign Country (96)');
    expect(placeOfSupplyText('97')).toBe('Other Territory (97)');
    expect(placeOfSupplyText('42')).toBe('State code 42');
  });
});

describe('a recipient outside India', () => {
  it('needs a country with state code 96, and has none otherwise', () => {
    expect(billingProfileProblems({ stateCode: '96', gstin: null, country: null })).toEqual([{ field: 'country', problem: expect.stringMatching(/required with state_code 96/) }]);
    expect(billingProfileProblems({ stateCode: '96', gstin: null, country: 'Singapore' })).toEqual([]);
    expect(billingProfileProblems({ stateCode: '29', gstin: null, country: 'Singapore' })).toEqual([{ field: 'country', problem: expect.stringMatching(/only with state_code 96/) }]);
    expect(billingProfileProblems({ stateCode: '29', gstin: null, country: null })).toEqual([]);
  });
});
