import { GatewayError } from '@gateway/errors';
import type { UsageRecord } from '../../common/domain/admin-records.ts';
import type { CsvCell } from '../../common/domain/csv.ts';
import type { LedgerPort } from '../../common/domain/ledger-port.ts';

/** The filters of a usage export: exactly listUsage's (window bounds in ms since the epoch, from inclusive, to exclusive). */
export interface UsageExportQuery {
  projectId?: string | undefined;
  modelSlug?: string | undefined;
  fromMs?: number | undefined;
  toMs?: number | undefined;
}

/** The most usage records one export holds: past it the caller is asked to narrow the filters, so an export cannot exhaust memory. */
export const maxUsageExportRows = 100_000;

/** Records per ledger page while an export walks the listing (the ledger's largest page). */
const exportPageSize = 500;

/** Asia/Kolkata's offset from UTC, ms (no daylight saving). */
const istOffsetMs = 330 * 60_000;

/** An instant as ISO-8601 in Asia/Kolkata, e.g. `2026-11-21T17:30:00.000+05:30`. */
function istTimestamp(date: Date): string {
  return new Date(date.getTime() + istOffsetMs).toISOString().replace('Z', '+05:30');
}

/** Today's calendar day in Asia/Kolkata, e.g. `2026-11-21` (export file names). */
export function istDay(now: Date): string {
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
export const usageExportColumns = [
  'id', 'created_at', 'created_at_ist', 'project_id', 'model', 'input_tokens', 'output_tokens', 'cost_micros', 'debited_micros',
  'usage_source', 'request_id', 'overrun_output_tokens',
  ...exportedTokenClasses.flatMap((tokenClass) => [`${tokenClass}_tokens`, `${tokenClass}_cost_micros`]),
];

/**
 * One usage record as an export line (money as µ₹ integers). A record its Settle itemised by
 * class has every class's tokens and cost (0 for a class it has none of); a plain record's class
 * cells are empty (its input_tokens and output_tokens were priced at the input and output prices).
 */
export function usageExportCells(record: UsageRecord): CsvCell[] {
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
