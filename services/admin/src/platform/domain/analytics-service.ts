import type { Database } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { requirePlatformAdmin, type Actor } from '../../common/domain/actor.ts';
import type { UsageRecord, UsageSummaryRow, UsageTokenClass } from '../../common/domain/admin-records.ts';
import { toCsv, type CsvCell } from '../../common/domain/csv.ts';
import type { LedgerPort } from '../../common/domain/ledger-port.ts';
import type { ResourceAccess } from '../../common/domain/resource-access.ts';

/** What the analytics aggregate is built from. */
export interface AnalyticsServiceDeps {
  db: Database;
  ledger: LedgerPort;
  access: ResourceAccess;
}

/** The filters of a usage export: exactly listUsage's (window bounds in ms since the epoch, from inclusive, to exclusive). */
export interface UsageExportQuery {
  projectId?: string | undefined;
  modelSlug?: string | undefined;
  fromMs?: number | undefined;
  toMs?: number | undefined;
}

/** The most usage records one export holds: past it the caller is asked to narrow the filters, so an export cannot exhaust memory. */
const maxUsageExportRows = 100_000;

/** Records per ledger page while an export walks the listing (the ledger's largest page). */
const exportPageSize = 500;

/** Asia/Kolkata's offset from UTC, ms (no daylight saving). */
const istOffsetMs = 330 * 60_000;

/** An instant as ISO-8601 in Asia/Kolkata, e.g. `2026-11-21T17:30:00.000+05:30`. */
function istTimestamp(date: Date): string {
  return new Date(date.getTime() + istOffsetMs).toISOString().replace('Z', '+05:30');
}

/** Today's calendar day in Asia/Kolkata, e.g. `2026-11-21` (export file names). */
function istDay(now: Date): string {
  return new Date(now.getTime() + istOffsetMs).toISOString().slice(0, 10);
}

/**
 * Every usage record `listPage` yields for one filter set, newest first, following page tokens
 * to the end; refuses with invalid_request once there are more than `maxRows`, before reading
 * further pages.
 */
export async function collectUsageForExport(
  listPage: LedgerPort['listUsage'],
  request: Omit<Parameters<LedgerPort['listUsage']>[0], 'pageSize' | 'pageToken'>,
  maxRows: number,
): Promise<UsageRecord[]> {
  const records: UsageRecord[] = [];
  let pageToken: string | undefined;
  do {
    const page = await listPage({ ...request, pageSize: exportPageSize, pageToken });
    records.push(...page.records);
    if (records.length > maxRows) {
      throw new GatewayError('invalid_request', {
        publicMessage: `The export would hold more than ${maxRows} usage records; narrow the filters (project_id, model, from, to).`,
      });
    }
    pageToken = page.nextPageToken ?? undefined;
  } while (pageToken !== undefined);
  return records;
}

/** The token price classes a usage export has columns for, in the order of docs/api-conventions.md. */
const exportedTokenClasses = ['input', 'cached_input', 'cache_write_5m', 'cache_write_1h', 'audio_input', 'image_input', 'output', 'reasoning'] as const;

/** The columns of a usage export, in order: the record, then tokens and customer cost (µ₹) of each token class. */
const usageExportColumns = [
  'id', 'created_at', 'created_at_ist', 'project_id', 'model', 'input_tokens', 'output_tokens', 'cost_micros', 'debited_micros',
  'usage_source', 'request_id', 'overrun_output_tokens',
  ...exportedTokenClasses.flatMap((tokenClass) => [`${tokenClass}_tokens`, `${tokenClass}_cost_micros`]),
];

/**
 * One usage record as an export line (money as µ₹ integers). A record its Settle itemised by
 * class has every class's tokens and cost (0 for a class it has none of); a plain record's class
 * cells are empty (its input_tokens and output_tokens were priced at the input and output prices).
 */
function usageExportCells(record: UsageRecord): CsvCell[] {
  const byClass = new Map(record.tokenClasses.map((entry) => [entry.tokenClass, entry]));
  return [
    record.id, record.createdAt.toISOString(), istTimestamp(record.createdAt), record.projectId, record.modelSlug,
    record.inputTokens, record.outputTokens, record.costMicros, record.debitedMicros, record.usageSource, record.requestId,
    record.overrunOutputTokens,
    ...exportedTokenClasses.flatMap((tokenClass): CsvCell[] => {
      if (byClass.size === 0) return [null, null];
      const entry = byClass.get(tokenClass);
      return [entry?.tokens ?? 0n, entry?.costMicros ?? 0n];
    }),
  ];
}

/** How the margin report groups usage. */
export type MarginGroupBy = 'day' | 'model' | 'organisation';

/** Usage summed over some rows: counts and µ₹. */
export interface UsageFigures {
  requests: bigint;
  inputTokens: bigint;
  outputTokens: bigint;
  /** What customers were charged (the usage's cost), µ₹. */
  customerPriceMicros: bigint;
  /** What the providers charge for it, µ₹. */
  providerCostMicros: bigint;
  /** Tokens, customer cost (costMicros) and provider cost per token class of the requests recorded by class, µ₹, ordered by class name. */
  tokenClasses: UsageTokenClass[];
  /** Requests recorded without classes: their cost is in the totals above, in no class. */
  unclassifiedRequests: bigint;
}

/**
 * Adds per-class figures to `into` (exact bigint sums), keeping it ordered by class name, so
 * totals over rows stay comparable with the ledger's per-row classes.
 */
export function addTokenClasses(into: UsageTokenClass[], from: readonly UsageTokenClass[]): void {
  for (const entry of from) {
    const sum = into.find((candidate) => candidate.tokenClass === entry.tokenClass);
    if (sum === undefined) {
      into.push({ ...entry });
    } else {
      sum.tokens += entry.tokens;
      sum.costMicros += entry.costMicros;
      sum.providerCostMicros += entry.providerCostMicros;
    }
  }
  into.sort((a, b) => (a.tokenClass < b.tokenClass ? -1 : a.tokenClass > b.tokenClass ? 1 : 0));
}

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

/** Figures with nothing in them, to add rows to. */
function emptyFigures(): UsageFigures {
  return { requests: 0n, inputTokens: 0n, outputTokens: 0n, customerPriceMicros: 0n, providerCostMicros: 0n, tokenClasses: [], unclassifiedRequests: 0n };
}

/** Adds one summary row's usage to `into` (exact bigint sums). */
function addRow(into: UsageFigures, row: UsageSummaryRow): void {
  addFigures(into, { ...row, customerPriceMicros: row.costMicros });
}

/** Adds figures to `into` (exact bigint sums), classes included. */
function addFigures(into: UsageFigures, from: UsageFigures): void {
  into.requests += from.requests;
  into.inputTokens += from.inputTokens;
  into.outputTokens += from.outputTokens;
  into.customerPriceMicros += from.customerPriceMicros;
  into.providerCostMicros += from.providerCostMicros;
  addTokenClasses(into.tokenClasses, from.tokenClasses);
  into.unclassifiedRequests += from.unclassifiedRequests;
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
  /** Names of organisations by id, from the admin database. */
  async function organisationNames(ids: readonly string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const { rows } = await db.query<{ id: string; name: string }>(
      'SELECT id, name FROM organisations WHERE id IN (SELECT unnest($1::text[]))', [[...ids]],
    );
    return new Map(rows.map((row) => [row.id, row.name]));
  }

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
    const names = query.groupBy === 'organisation' ? await organisationNames([...new Set([...groups.values()].map((group) => group.key))]) : undefined;
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
