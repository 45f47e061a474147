import { describe, expect, it } from 'vitest';
import { durationText, emptyRequestFilters, istMillisecond, requestFailed, requestFilterQuery } from './request-log.ts';

describe('requestFilterQuery', () => {
  it('sends no filter for an empty form', () => {
    expect(requestFilterQuery(emptyRequestFilters)).toEqual({ ok: true, query: {} });
  });

  it('sends project, model, surface, a status class and the IST day bounds (to exclusive, the day after)', () => {
    const result = requestFilterQuery({
      ...emptyRequestFilters, projectId: 'proj_1', model: 'acme-chat', surface: 'responses', status: '4xx', fromDay: '2026-11-01', toDay: '2026-11-30',
    });
    expect(result).toEqual({
      ok: true,
      query: {
        project_id: 'proj_1', model: 'acme-chat', surface: 'responses', status: '4xx',
        from: String(Date.parse('2026-11-01T00:00:00+05:30')), to: String(Date.parse('2026-12-01T00:00:00+05:30')),
      },
    });
  });

  it('maps success to 2xx and sends an exact status, refusing one that is not an HTTP status', () => {
    expect(requestFilterQuery({ ...emptyRequestFilters, status: 'success' })).toEqual({ ok: true, query: { status: '2xx' } });
    expect(requestFilterQuery({ ...emptyRequestFilters, status: '5xx' })).toEqual({ ok: true, query: { status: '5xx' } });
    expect(requestFilterQuery({ ...emptyRequestFilters, status: 'exact', exactStatus: ' 402 ' })).toEqual({ ok: true, query: { status: '402' } });
    for (const bad of ['', '42', '600', '4xx', 'abc']) {
      expect(requestFilterQuery({ ...emptyRequestFilters, status: 'exact', exactStatus: bad }).ok, bad).toBe(false);
    }
  });

  it('refuses a from day after the to day', () => {
    expect(requestFilterQuery({ ...emptyRequestFilters, fromDay: '2026-11-06', toDay: '2026-11-05' }).ok).toBe(false);
  });
});

describe('request text', () => {
  it('shows an instant in IST to the millisecond', () => {
    expect(istMillisecond('2025-11-20T04:30:01.123Z')).toBe('20 Nov 2025, 10:00:01.123 IST');
    expect(istMillisecond('2026-12-31T18:30:00.007Z')).toBe('1 Jan 2027, 00:00:00.007 IST');
    expect(istMillisecond('not a time')).toBe('—');
  });

  it('shows durations exactly in ms', () => {
    expect(durationText(7)).toBe('7 ms');
    expect(durationText(812)).toBe('812 ms');
    expect(durationText(1234567)).toBe('12,34,567 ms');
    expect(durationText(null)).toBe('—');
  });

  it('counts a 4xx, a 5xx and a stream that failed after its 200 headers as failed', () => {
    expect(requestFailed({ status: 200, error_code: null })).toBe(false);
    expect(requestFailed({ status: 402, error_code: 'insufficient_balance' })).toBe(true);
    expect(requestFailed({ status: 502, error_code: 'upstream_error' })).toBe(true);
    expect(requestFailed({ status: 200, error_code: 'upstream_error' })).toBe(true);
  });
});
