import type { Actor } from '../../common/domain/actor.ts';
import type { UsageRecord, UsageSummaryRow } from '../../common/domain/admin-records.ts';
import type { LedgerPort } from '../../common/domain/ledger-port.ts';
import type { ResourceAccess } from '../../common/domain/resource-access.ts';

/** Filters and paging of a usage listing. */
export interface UsageQuery {
  projectId?: string | undefined;
  modelSlug?: string | undefined;
  /** Window, ms since the epoch: from inclusive, to exclusive; undefined = unbounded. */
  fromMs?: number | undefined;
  toMs?: number | undefined;
  /** 1..500 records. */
  limit: number;
  cursor?: string | undefined;
}

/** What the usage reads are built from. */
export interface UsageServiceDeps {
  ledger: LedgerPort;
  access: ResourceAccess;
}

/** An organisation's usage as the ledger recorded it: records and daily sums (route tag "balance", under /usage). */
export function createUsageService({ ledger, access }: UsageServiceDeps) {
  const { requireOrganisation, requireProjectOf } = access;

  return {
    /** A page of an organisation's usage records, newest first. */
    async listUsage(actor: Actor, organisationId: string, query: UsageQuery): Promise<{ records: UsageRecord[]; nextCursor: string | null }> {
      await requireOrganisation(actor, organisationId);
      if (query.projectId !== undefined) await requireProjectOf(actor, organisationId, query.projectId);
      const page = await ledger.listUsage({
        organisationId, projectId: query.projectId, modelSlug: query.modelSlug, fromMs: query.fromMs, toMs: query.toMs,
        pageSize: query.limit, pageToken: query.cursor,
      });
      return { records: page.records, nextCursor: page.nextPageToken };
    },

    /**
     * An organisation's usage summed by day (Asia/Kolkata) and model, and by project with
     * groupByProject; optionally for one project and a window (ms since the epoch).
     */
    async summarizeUsage(actor: Actor, organisationId: string, query: {
      projectId?: string | undefined; fromMs?: number | undefined; toMs?: number | undefined; groupByProject?: boolean | undefined;
    }): Promise<UsageSummaryRow[]> {
      await requireOrganisation(actor, organisationId);
      if (query.projectId !== undefined) await requireProjectOf(actor, organisationId, query.projectId);
      return ledger.summarizeUsage({ organisationId, ...query });
    },
  };
}
