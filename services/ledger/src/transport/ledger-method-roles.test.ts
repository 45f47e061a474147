import { ledgerV1 } from '@gateway/contracts';
import { authorizationError } from '@gateway/grpc';
import { describe, expect, it } from 'vitest';
import { ledgerMethodRoles } from './ledger-method-roles.ts';

describe('ledgerMethodRoles', () => {
  it('names every method of LedgerService, and nothing else', () => {
    expect(Object.keys(ledgerMethodRoles).sort()).toEqual(Object.keys(ledgerV1.LedgerServiceService).sort());
  });

  it('lets the proxy only hold and resolve reservations and grants (and record its requests), and the admin only everything else', () => {
    const byRole = (role: string) => Object.entries(ledgerMethodRoles).filter(([, roles]) => (roles as readonly string[]).includes(role)).map(([method]) => method).sort();
    expect(byRole('proxy')).toEqual(['acquireGrant', 'adjustGrant', 'checkpoint', 'operate', 'recordRequests', 'release', 'reserve', 'settle']);
    expect(byRole('admin')).toEqual([
      'credit', 'getBalance', 'getProjectSpend', 'getRequest', 'listBudgetAlerts', 'listProjectSpends', 'listRequests', 'listUsage', 'openAccount', 'refundCredit',
      'reverseRefund', 'setProjectBudget', 'summarizeDeployments', 'summarizeUsage', 'verify', 'watchBudgetAlerts',
    ]);
    expect(byRole('ledger')).toEqual([]);
  });

  it('refuses Credit to the proxy and to a caller without identity, and allows it to the admin', () => {
    expect(authorizationError(ledgerMethodRoles, 'credit', 'admin')).toBeUndefined();
    expect(authorizationError(ledgerMethodRoles, 'credit', 'proxy')?.code).toBe('permission_denied');
    expect(authorizationError(ledgerMethodRoles, 'credit', 'ledger')?.code).toBe('permission_denied');
    expect(authorizationError(ledgerMethodRoles, 'credit', undefined)?.code).toBe('unauthenticated');
    expect(authorizationError(ledgerMethodRoles, 'mintMoney', 'admin')?.code).toBe('permission_denied');
  });
});
