import { describe, expect, it } from 'vitest';
import type { UsageRecord } from '../../common/domain/admin-records.ts';
import { collectUsageForExport } from './usage-export.ts';
import type { UsageTokenClass } from '../../common/domain/admin-records.ts';
import { addFigures, emptyFigures } from './usage-figures.ts';

/** The per-class sum of addFigures, reached through figures that carry only those classes. */
function addTokenClasses(into: UsageTokenClass[], from: UsageTokenClass[]): void {
  addFigures({ ...emptyFigures(), tokenClasses: into }, { ...emptyFigures(), tokenClasses: from });
}
import type { LedgerPort } from '../../common/domain/ledger-port.ts';

/** A listing of `total` records served in pages by offset tokens, recording each request. */
function pagedListing(total: number) {
  const requests: Array<Parameters<LedgerPort['listUsage']>[0]> = [];
  const listPage: LedgerPort['listUsage'] = async (request) => {
    requests.push(request);
    const offset = request.pageToken === undefined ? 0 : Number(request.pageToken);
    const end = Math.min(total, offset + request.pageSize);
    const records = Array.from({ length: end - offset }, (_, index) => ({ id: `u-${offset + index}` }) as UsageRecord);
    return { records, nextPageToken: end < total ? String(end) : null };
  };
  return { listPage, requests };
}

describe('collectUsageForExport', () => {
  it('follows page tokens to the last page, passing the filters on every page', async () => {
    const { listPage, requests } = pagedListing(1_234);
    const filters = { organisationId: 'org_1', projectId: 'proj_1', modelSlug: 'chat', fromMs: 5, toMs: 9 };
    const records = await collectUsageForExport(listPage, filters, 100_000);
    expect(records.map((record) => record.id)).toEqual(Array.from({ length: 1_234 }, (_, index) => `u-${index}`));
    expect(requests.map((request) => request.pageToken)).toEqual([undefined, '500', '1000']);
    expect(requests.every((request) => request.pageSize === 500 && request.projectId === 'proj_1' && request.toMs === 9)).toBe(true);
  });

  it('allows exactly the cap, and refuses one record more before reading further pages', async () => {
    expect(await collectUsageForExport(pagedListing(1_000).listPage, { organisationId: 'org_1' }, 1_000)).toHaveLength(1_000);
    const { listPage, requests } = pagedListing(5_000);
    await expect(collectUsageForExport(listPage, { organisationId: 'org_1' }, 1_000)).rejects.toMatchObject({
      code: 'invalid_request',
      publicMessage: expect.stringContaining('narrow the filters'),
    });
    expect(requests).toHaveLength(3);
  });
});

describe('addTokenClasses', () => {
  it('sums each class exactly in bigint and keeps the classes ordered by name', () => {
    const into = [{ tokenClass: 'output', tokens: 5n, costMicros: 9_007_199_254_740_993n, providerCostMicros: 1n }];
    addTokenClasses(into, [
      { tokenClass: 'reasoning', tokens: 2n, costMicros: 20n, providerCostMicros: 10n },
      { tokenClass: 'cached_input', tokens: 40n, costMicros: 12n, providerCostMicros: 6n },
      { tokenClass: 'output', tokens: 1n, costMicros: 2n, providerCostMicros: 1n },
    ]);
    expect(into).toEqual([
      { tokenClass: 'cached_input', tokens: 40n, costMicros: 12n, providerCostMicros: 6n },
      { tokenClass: 'output', tokens: 6n, costMicros: 9_007_199_254_740_995n, providerCostMicros: 2n },
      { tokenClass: 'reasoning', tokens: 2n, costMicros: 20n, providerCostMicros: 10n },
    ]);
  });

  it('leaves the figures added from untouched', () => {
    const from = [{ tokenClass: 'input', tokens: 1n, costMicros: 1n, providerCostMicros: 1n }];
    const into: typeof from = [];
    addTokenClasses(into, from);
    addTokenClasses(into, from);
    expect(from).toEqual([{ tokenClass: 'input', tokens: 1n, costMicros: 1n, providerCostMicros: 1n }]);
    expect(into).toEqual([{ tokenClass: 'input', tokens: 2n, costMicros: 2n, providerCostMicros: 2n }]);
  });
});
