import { describe, expect, it } from 'vitest';
import { gstinStates, gstStateCodesText, placeOfSupplyStates } from '../../../shared/gst-states.ts';
import { billingProfileProblems } from './billing-profile.ts';
import { gstinCheckCharacter } from '../../invoicing/domain/gstin.ts';
import { placeOfSupplyText } from '../../invoicing/domain/gst.ts';

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

describe('a GSTIN\'s state', () => {
  it('is a code in force: 96 (abroad), 99 (Centre Jurisdiction) and retired codes are refused, whatever the state code says', () => {
    // Well formed, with the right check character, under each code no GSTIN here is issued under.
    for (const prefix of ['96', '99', '25', '28']) {
      const gstin = `${prefix}AAPFU0939F1Z`;
      const withCheck = `${gstin}${gstinCheckCharacter(gstin)}`;
      const problems = billingProfileProblems({ stateCode: prefix, gstin: withCheck, country: prefix === '96' ? 'Singapore' : null });
      expect(problems.find((problem) => problem.field === 'gstin')?.problem, prefix).toMatch(new RegExp(`starts with state ${prefix}, which no GSTIN`));
    }
    expect(billingProfileProblems({ stateCode: '27', gstin: '27AAPFU0939F1ZV' })).toEqual([]);
  });

  it('spells the code lists from the one list of GST states', () => {
    expect(gstStateCodesText(placeOfSupplyStates)).toBe('01 to 24, 26, 27, 29 to 38, 96 or 97');
    expect(gstStateCodesText(gstinStates)).toBe('01 to 24, 26, 27, 29 to 38 or 97');
  });
});

describe('the places of supply the server accepts', () => {
  // The dashboard's state picker offers placeOfSupplyStates itself (web/src/gst-states.test.ts).
  it('are exactly the shared list: every code from 00 to 99 in it is accepted, every other refused', () => {
    const offered = new Set(placeOfSupplyStates.map((state) => state.code));
    for (let code = 0; code <= 99; code += 1) {
      const stateCode = String(code).padStart(2, '0');
      const accepted = !billingProfileProblems({ stateCode, gstin: null, country: stateCode === '96' ? 'Singapore' : null }).some((problem) => problem.field === 'state_code');
      expect(accepted, stateCode).toBe(offered.has(stateCode));
    }
  });
});
