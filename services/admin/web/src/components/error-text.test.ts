import { describe, expect, it } from 'vitest';
import { readableErrorText } from './error-text.ts';

describe('readableErrorText', () => {
  it('names the GSTIN by its label and rewords the check-character message', () => {
    expect(readableErrorText('gstin has a wrong check character (a typing error?)')).toBe('GSTIN: the check character is wrong (a typing error?)');
  });

  it('replaces a field path with the label of its last part', () => {
    expect(readableErrorText('body.budget.monthly_cap_micros: must be at least 0')).toBe('Monthly cap: must be at least 0');
    expect(readableErrorText('rpm_limit: must be an integer between 1 and 1000000')).toBe('Requests per minute: must be an integer between 1 and 1000000');
  });

  it('rewords every part of a message naming several fields', () => {
    expect(readableErrorText('name: must not be empty; state_code: must be one of the GST state codes'))
      .toBe('Name: please fill this in; State (place of supply): must be one of the GST state codes');
  });

  it('leaves sentences that do not start with a known field as they are', () => {
    expect(readableErrorText('The admin answered 502.')).toBe('The admin answered 502.');
    expect(readableErrorText('budget: is not a known field')).toBe('budget: is not a known field');
    expect(readableErrorText('the last owner cannot be demoted')).toBe('the last owner cannot be demoted');
  });
});
