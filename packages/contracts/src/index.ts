/**
 * The gRPC contracts between the gateway's services, generated from `proto/` by ts-proto.
 * Regenerate with `pnpm gen`; `generated-code.test.ts` fails when the committed code is stale.
 * `ledger-results.ts` is hand-written beside it: which ledger results are transient (worth retrying);
 * `ledger-result-names.ts` too: every ledger result's name ⇄ proto value, the one table each side derives from.
 */
export * as ledgerV1 from './gen/gateway/ledger/v1/ledger.ts';
export * as configV1 from './gen/gateway/config/v1/config.ts';
export { isTransientResult, ledgerResultTransient, type LedgerResultOperation, type TransientTable } from './ledger-results.ts';
export { ledgerResultNames, resultNamesByValue, type LedgerResultName } from './ledger-result-names.ts';
