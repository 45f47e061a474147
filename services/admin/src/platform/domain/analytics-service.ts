import type { Database } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { requirePlatformAdmin, type Actor } from '../../common/domain/actor.ts';
import type { UsageSummaryRow } from '../../common/domain/admin-records.ts';
import { toCsv, type CsvCell } from '../../common/domain/csv.ts';
import type { DeploymentSummaryRow, LedgerPort } from '../../common/domain/ledger-port.ts';
import type { ResourceAccess } from '../../common/domain/resource-access.ts';
import { organisationNamesById } from '../../tenancy/domain/organisation-store.ts';
import { collectUsageForExport, istDay, maxUsageExportRows, usageExportCells, usageExportColumns, type UsageExportQuery } from './usage-export.ts';
import { addFigures, addRow, emptyFigures, type UsageFigures } from './usage-figures.ts';

/** What the analytics aggregate is built from. */
export interface AnalyticsServiceDeps {
  db: Database;
  ledger: LedgerPort;
  access: ResourceAccess;
}

/** How the margin report groups usage. */
export type MarginGroupBy = 'day' | 'model' | 'organisation';

/** One group of the margin report. */
export interface MarginRow extends UsageFigures {
  /** The day (Asia/Kolkata, `2026-11-21`), the gateway model slug, or the organisation id. */
  key: string;
  /** With group_by=organisation: its name in the admin database (null if it was deleted); undefined otherwise. */
  organisationName: string | null | undefined;
  /** Which usage the row sums: commercial (revenue) or internal (sponsored, never debited). */
  billingMode: 'commercial' | 'internal';
  /** customer price − provider cost for commercial usage, µ₹ (negative: sold below cost); null for internal usage, which earns nothing. */
  marginMicros: bigint | null;
}

/** Platform analytics over a window: commercial usage and its margin, and internal usage apart from it. */
export interface MarginReport {
  groupBy: MarginGroupBy;
  /** Commercial usage by group. */
  data: MarginRow[];
  /** The commercial rows summed, with their margin. */
  totals: UsageFigures & { marginMicros: bigint };
  /** Internal (sponsored) organisations' usage at customer price and at provider cost; their margin is not revenue. */
  internal: { data: MarginRow[]; totals: UsageFigures };
}

/** One model and upstream deployment over a window, as platform admins see it; money µ₹. */
export interface DeploymentReportRow extends DeploymentSummaryRow {
  /** The answers' provider cost plus the failed attempts', µ₹. */
  totalProviderCostMicros: bigint;
  /** Commercial customer cost − total provider cost, µ₹ (negative: the deployment costs more than it earns). */
  marginMicros: bigint;
}

/** The key of a summary row under a grouping. */
function keyOf(row: UsageSummaryRow, groupBy: MarginGroupBy): string {
  if (groupBy === 'day') return row.day;
  if (groupBy === 'model') return row.modelSlug;
  return row.organisationId;
}

/** Days in order; models and organisations largest customer price first (the charts' order), then by key. */
function compareRows(groupBy: MarginGroupBy) {
  return (a: MarginRow, b: MarginRow): number => {
    if (groupBy !== 'day' && a.customerPriceMicros !== b.customerPriceMicros) return a.customerPriceMicros > b.customerPriceMicros ? -1 : 1;
    return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
  };
}

/** The columns of a margin export, in order. */
const marginExportColumns = [
  'key', 'organisation_name', 'billing_mode', 'requests', 'input_tokens', 'output_tokens', 'customer_price_micros', 'provider_cost_micros',
  'margin_micros',
] as const;

/** Usage export and platform analytics: customer price against provider cost (route tag "analytics"). */
export function createAnalyticsService({ db, ledger, access }: AnalyticsServiceDeps) {
  /** Commercial and internal usage over a window, grouped and summed in bigint. */
  async function marginReport(actor: Actor, query: { fromMs?: number | undefined; toMs?: number | undefined; groupBy: MarginGroupBy }): Promise<MarginReport> {
    requirePlatformAdmin(actor);
    const rows = await ledger.summarizeUsage({ organisationId: undefined, fromMs: query.fromMs, toMs: query.toMs });
    const groups = new Map<string, MarginRow>();
    for (const row of rows) {
      if (row.billingMode === undefined) {
        throw new GatewayError('internal_error', { internalMessage: 'ledger SummarizeUsage over every organisation returned a row without its billing mode' });
      }
      const key = keyOf(row, query.groupBy);
      const groupKey = `${row.billingMode} ${key}`;
      let group = groups.get(groupKey);
      if (group === undefined) {
        group = { key, organisationName: undefined, billingMode: row.billingMode, marginMicros: null, ...emptyFigures() };
        groups.set(groupKey, group);
      }
      addRow(group, row);
    }
    const names = query.groupBy === 'organisation' ? await organisationNamesById(db, [...new Set([...groups.values()].map((group) => group.key))]) : undefined;
    const commercial: MarginRow[] = [];
    const internal: MarginRow[] = [];
    for (const group of groups.values()) {
      if (names !== undefined) group.organisationName = names.get(group.key) ?? null;
      if (group.billingMode === 'commercial') {
        group.marginMicros = group.customerPriceMicros - group.providerCostMicros;
        commercial.push(group);
      } else {
        internal.push(group);
      }
    }
    commercial.sort(compareRows(query.groupBy));
    internal.sort(compareRows(query.groupBy));
    const sum = (list: readonly MarginRow[]): UsageFigures => {
      const total = emptyFigures();
      for (const row of list) addFigures(total, row);
      return total;
    };
    const commercialTotals = sum(commercial);
    return {
      groupBy: query.groupBy,
      data: commercial,
      totals: { ...commercialTotals, marginMicros: commercialTotals.customerPriceMicros - commercialTotals.providerCostMicros },
      internal: { data: internal, totals: sum(internal) },
    };
  }

  return {
    /**
     * An organisation's usage records for listUsage's filters, every page, as an RFC 4180 CSV
     * (newest first; money in µ₹), with its download file name; invalid_request past
     * maxUsageExportRows records.
     */
    async exportUsage(actor: Actor, organisationId: string, query: UsageExportQuery): Promise<{ csv: string; fileName: string; rows: number }> {
      await access.requireOrganisation(actor, organisationId);
      if (query.projectId !== undefined) await access.requireProjectOf(actor, organisationId, query.projectId);
      const records = await collectUsageForExport(
        (request) => ledger.listUsage(request),
        { organisationId, projectId: query.projectId, modelSlug: query.modelSlug, fromMs: query.fromMs, toMs: query.toMs },
        maxUsageExportRows,
      );
      return {
        csv: toCsv(usageExportColumns, records.map(usageExportCells)),
        fileName: `usage-${organisationId}-${istDay(new Date())}.csv`,
        rows: records.length,
      };
    },

    /** Platform analytics: customer price, provider cost and margin by day, model or organisation over a window (platform admins only). */
    marginReport,

    /**
     * Platform analytics per model and upstream deployment over a window (platform admins only):
     * the records each answered, their commercial customer cost, provider cost including the
     * failed attempts its provider may have billed, and the margin. Never shown to organisations.
     */
    async deploymentReport(actor: Actor, query: { fromMs?: number | undefined; toMs?: number | undefined }): Promise<DeploymentReportRow[]> {
      requirePlatformAdmin(actor);
      const rows = await ledger.summarizeDeployments(query);
      return rows.map((row) => {
        const totalProviderCostMicros = row.providerCostMicros + row.failedAttemptProviderCostMicros;
        return { ...row, totalProviderCostMicros, marginMicros: row.costMicros - totalProviderCostMicros };
      });
    },

    /** The margin report as an RFC 4180 CSV: commercial rows, then internal ones (empty margin), with its download file name. */
    async exportMarginReport(actor: Actor, query: { fromMs?: number | undefined; toMs?: number | undefined; groupBy: MarginGroupBy }): Promise<{ csv: string; fileName: string }> {
      const report = await marginReport(actor, query);
      const cells = (row: MarginRow): CsvCell[] => [
        row.key, row.organisationName ?? null, row.billingMode, row.requests, row.inputTokens, row.outputTokens,
        row.customerPriceMicros, row.providerCostMicros, row.marginMicros,
      ];
      return {
        csv: toCsv(marginExportColumns, [...report.data, ...report.internal.data].map(cells)),
        fileName: `margin-by-${query.groupBy}-${istDay(new Date())}.csv`,
      };
    },
  };
}
