import type { ledgerV1 } from '@gateway/contracts';
import type { MethodRoles } from '@gateway/grpc';

/**
 * Who may call each LedgerService method: the ONE table the ledger's gRPC server enforces
 * (authorizeService in app.ts). The proxy moves money only through reservations it holds; only
 * the admin credits, opens accounts and reads balances and usage. A method missing here is
 * refused, and ledger-method-roles.test.ts checks the table names every method of the service.
 */
export const ledgerMethodRoles: MethodRoles<keyof typeof ledgerV1.LedgerServiceService> = {
  reserve: ['proxy'],
  settle: ['proxy'],
  release: ['proxy'],
  checkpoint: ['proxy'],
  operate: ['proxy'],
  acquireGrant: ['proxy'],
  adjustGrant: ['proxy'],
  recordRequests: ['proxy'],
  openAccount: ['admin'],
  credit: ['admin'],
  refundCredit: ['admin'],
  reverseRefund: ['admin'],
  getBalance: ['admin'],
  listUsage: ['admin'],
  setProjectBudget: ['admin'],
  getProjectSpend: ['admin'],
  summarizeUsage: ['admin'],
  listBudgetAlerts: ['admin'],
  watchBudgetAlerts: ['admin'],
  verify: ['admin'],
  listProjectSpends: ['admin'],
  listRequests: ['admin'],
  getRequest: ['admin'],
  summarizeDeployments: ['admin'],
};
