import { ledgerV1 } from '@gateway/contracts';
import { testPostgresUrl } from '@gateway/testkit';
import { beforeAll, describe, expect, it } from 'vitest';
import { fundedOrganisation, uniqueId } from './testing/start-test-ledger.ts';
import { useTestLedger } from './testing/ledger-test-setup.ts';

const serverUrl = testPostgresUrl();

/** ListUsage: newest first, keyset pages, filters by project, model and time window. */
describe.skipIf(!serverUrl)('ListUsage', () => {
  const ledger = useTestLedger('postgres', { serverUrl, conservation: 'after-each' });
  let organisationId: string;
  /** Reservation ids in the order their usage was recorded. */
  const settledInOrder: Array<{ reservationId: string; projectId: string; modelSlug: string }> = [];

  beforeAll(async () => {
    organisationId = await fundedOrganisation(ledger, 100_000_000n);
    for (let index = 0; index < 7; index++) {
      const projectId = index % 2 === 0 ? 'project-even' : 'project-odd';
      const modelSlug = index < 4 ? 'model-a' : 'model-b';
      const reservationId = uniqueId(`use${index}`);
      await ledger.reserve({ reservationId, organisationId, projectId, modelSlug, amountMicros: 1_000_000n });
      await ledger.settle({ reservationId, modelSlug, costMicros: BigInt(1000 + index), requestId: `req-${index}` });
      settledInOrder.push({ reservationId, projectId, modelSlug });
    }
  });

  /** Reads every page with a page size, returning the pages' reservation ids. */
  async function allPages(request: Partial<ledgerV1.ListUsageRequest>): Promise<string[][]> {
    const pages: string[][] = [];
    let pageToken = '';
    do {
      const page = await ledger.listUsage({ organisationId, ...request, pageToken });
      pages.push(page.records.map((record) => record.reservationId));
      pageToken = page.nextPageToken;
    } while (pageToken !== '' && pages.length < 20);
    return pages;
  }

  it('pages newest first without repeating or skipping a record', async () => {
    const newestFirst = settledInOrder.map((entry) => entry.reservationId).reverse();
    const pages = await allPages({ pageSize: 3 });
    expect(pages.map((page) => page.length)).toEqual([3, 3, 1]);
    expect(pages.flat()).toEqual(newestFirst);
    expect((await allPages({ pageSize: 7 }))).toEqual([newestFirst]);
    expect((await allPages({ pageSize: 0 }))).toEqual([newestFirst]);
  });

  it('filters by project and by model', async () => {
    const expected = (keep: (entry: (typeof settledInOrder)[number]) => boolean) =>
      settledInOrder.filter(keep).map((entry) => entry.reservationId).reverse();
    expect((await allPages({ projectId: 'project-odd', pageSize: 2 })).flat()).toEqual(expected((entry) => entry.projectId === 'project-odd'));
    expect((await allPages({ modelSlug: 'model-b' })).flat()).toEqual(expected((entry) => entry.modelSlug === 'model-b'));
    expect((await allPages({ projectId: 'project-even', modelSlug: 'model-a' })).flat())
      .toEqual(expected((entry) => entry.projectId === 'project-even' && entry.modelSlug === 'model-a'));
    expect(await ledger.listUsage({ organisationId: uniqueId('nobody') })).toEqual({ records: [], nextPageToken: '' });
  });

  it('limits to a time window: from inclusive, to exclusive', async () => {
    const { records } = await ledger.listUsage({ organisationId });
    const oldestFirst = [...records].reverse();
    const third = oldestFirst[2]!;
    const fromThird = await ledger.listUsage({ organisationId, fromMs: third.createdAtMs });
    // Everything at or after the third record's millisecond is in; nothing before it is.
    for (const record of fromThird.records) expect(record.createdAtMs).toBeGreaterThanOrEqual(third.createdAtMs);
    expect(fromThird.records.map((record) => record.reservationId)).toContain(third.reservationId);
    expect(fromThird.records.length).toBe(records.filter((record) => record.createdAtMs >= third.createdAtMs).length);

    const beforeThird = await ledger.listUsage({ organisationId, toMs: third.createdAtMs });
    for (const record of beforeThird.records) expect(record.createdAtMs).toBeLessThan(third.createdAtMs);
    expect(beforeThird.records.length).toBe(records.filter((record) => record.createdAtMs < third.createdAtMs).length);

    const onlyThirdsMillisecond = await ledger.listUsage({ organisationId, fromMs: third.createdAtMs, toMs: third.createdAtMs + 1n });
    expect(onlyThirdsMillisecond.records.map((record) => record.reservationId)).toContain(third.reservationId);
    expect(onlyThirdsMillisecond.records.every((record) => record.createdAtMs === third.createdAtMs)).toBe(true);
  });
});
