import { describe, expect, it } from 'vitest';
import { auditActorText, auditChangeLines } from './audit-text.ts';

describe('auditActorText', () => {
  const emails = new Map([['per_1', 'asha@example.com']]);

  it('names a person by email, or by id when unknown', () => {
    expect(auditActorText({ kind: 'person', token_id: null, person_id: 'per_1' }, emails)).toBe('asha@example.com');
    expect(auditActorText({ kind: 'person', token_id: null, person_id: 'per_2' }, emails)).toBe('per_2');
  });

  it('names tokens by kind and id, and the command line and the admin itself', () => {
    expect(auditActorText({ kind: 'platform_admin', token_id: 'adm_9', person_id: null }, emails)).toBe('platform token adm_9');
    expect(auditActorText({ kind: 'organisation_token', token_id: 'adm_8', person_id: null }, emails)).toBe('organisation token adm_8');
    expect(auditActorText({ kind: 'cli', token_id: null, person_id: null }, emails)).toBe('command line');
    expect(auditActorText({ kind: 'system', token_id: null, person_id: null }, emails)).toBe('the admin itself');
  });
});

describe('auditChangeLines', () => {
  it('shows each field as before → after, none for absent values and JSON for the rest', () => {
    expect(auditChangeLines({
      status: { before: 'active', after: 'suspended' },
      rpm_limit: { before: 60, after: 120 },
      budget: { before: null, after: { monthly_cap_micros: '5000000' } },
    })).toEqual([
      'status: active → suspended',
      'rpm_limit: 60 → 120',
      'budget: none → {"monthly_cap_micros":"5000000"}',
    ]);
  });

  it('cuts long values short', () => {
    const [line] = auditChangeLines({ allowed_gateway_models: { before: [], after: Array.from({ length: 30 }, (_, index) => `model-${index}`) } });
    expect(line!.length).toBeLessThan(120);
    expect(line!.endsWith('…')).toBe(true);
  });
});
