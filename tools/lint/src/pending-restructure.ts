// TEMPORARY (issue 11). Files that break a lint rule and belong to restructuring still under
// way in issue 11 (the proxy's Ledger port and stream meter, the admin split by aggregate,
// service-runtime, the ledger's SQL sources, the fault suite). Their findings, from ESLint and
// from knip alike, are printed as warnings instead of failing `pnpm lint` until that work lands.
// THIS LIST MUST BE EMPTY BEFORE ISSUE 11 CLOSES: fix a file's findings, then delete its line.
// Paths are relative to the repository root (ESLint globs; knip's findings are matched exactly).

/** Repository-relative paths whose lint findings are warnings for now (see the comment above). */
export const pendingRestructure: string[] = [
  'services/admin/src/domain/admin-records.ts',
  'services/admin/src/domain/audit-log.ts',
  'services/admin/src/domain/ids.ts',
  'services/admin/src/domain/upstream-recheck.ts',
  'services/admin/src/domain/upstream-url.ts',
  'services/admin/src/http/admin-routes.ts',
  'services/admin/src/http/request-schemas.ts',
  'services/admin/src/http/response-schemas.ts',
  'services/admin/src/http/validation.ts',
  'services/ledger/src/domain/append-movement.ts',
  'services/ledger/src/domain/checkpoint.ts',
  'services/ledger/src/domain/find-balance-differences.ts',
  'services/ledger/src/domain/list-budget-alerts.ts',
  'services/ledger/src/domain/list-usage.ts',
  'services/ledger/src/domain/project-budget.ts',
  'services/ledger/src/domain/validation.ts',
  'services/ledger/src/transport/ledger-grpc-service.ts',
  'services/proxy/src/domain/chat-request.ts',
  'services/proxy/src/domain/config-snapshot.test.ts',
  'services/proxy/src/domain/config-snapshot.ts',
  'services/proxy/src/domain/ledger-port.ts',
  'services/proxy/src/domain/normalized-completion.ts',
  'services/proxy/src/domain/token-estimate.ts',
  'services/proxy/src/domain/upstream-failure.ts',
  'services/proxy/src/http/request-context.ts',
  'services/proxy/src/inference/chat-billing.ts',
  'services/proxy/src/inference/complete-chat.ts',
];
