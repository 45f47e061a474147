import { describe, expect, it } from 'vitest';
import { usageFilterQuery } from './usage-filters.ts';

const empty = { projectId: '', model: '', fromDay: '', toDay: '' };

describe('usageFilterQuery', () => {
  it('sends no filter for an empty form', () => {
    expect(usageFilterQuery(empty)).toEqual({ ok: true, query: {} });
  });

  it('sends the project, the trimmed model and the IST day bounds in ms (to exclusive, the day after)', () => {
    const result = usageFilterQuery({ projectId: 'proj_1', model: ' acme-chat ', fromDay: '2026-11-01', toDay: '2026-11-30' });
    expect(result).toEqual({
      ok: true,
      query: {
        project_id: 'proj_1',
        model: 'acme-chat',
        from: String(Date.parse('2026-11-01T00:00:00+05:30')),
        to: String(Date.parse('2026-12-01T00:00:00+05:30')),
      },
    });
  });

  it('allows a single day (from = to)', () => {
    const result = usageFilterQuery({ ...empty, fromDay: '2026-11-05', toDay: '2026-11-05' });
    expect(result.ok && Number(result.query.to) - Number(result.query.from)).toBe(24 * 60 * 60 * 1000);
  });

  it('refuses a from day after the to day, and invalid dates', () => {
    expect(usageFilterQuery({ ...empty, fromDay: '2026-11-06', toDay: '2026-11-05' })).toEqual({
      ok: false, problem: 'The "from" date must not be after the "to" date.',
    });
    expect(usageFilterQuery({ ...empty, fromDay: '2026-02-31' }).ok).toBe(false);
    expect(usageFilterQuery({ ...empty, toDay: 'soon' }).ok).toBe(false);
  });
});
