import * as ledger from '../gen/gateway/ledger/v1/ledger.ts';

/** Every generated `…Result` enum of the ledger contract, by the operation it answers (ReserveResult -> reserve): what the result tables must cover. */
export function ledgerResultEnums(): Map<string, Record<string, number>> {
  const enums = new Map<string, Record<string, number>>();
  for (const [name, value] of Object.entries(ledger)) {
    if (!name.endsWith('Result') || typeof value !== 'object' || value === null) continue;
    const members = value as Record<string, unknown>;
    if (!Object.values(members).every((member) => typeof member === 'number')) continue;
    enums.set(name.slice(0, 1).toLowerCase() + name.slice(1, -'Result'.length), members as Record<string, number>);
  }
  return enums;
}
