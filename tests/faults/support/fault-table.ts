/**
 * The fault suite's table: each fault test records what it injected and what it checked, and
 * the reporter (fault-table-reporter.ts) prints every row once the run ends. Rows travel through
 * a JSON-lines file named by FAULT_TABLE_FILE (set by vitest.faults.config.ts), because vitest
 * runs test files in worker processes and the reporter in the main one.
 */
import { appendFileSync } from 'node:fs';

/** One line of the fault table. */
export interface FaultRow {
  /** The scenario, e.g. "kill -9 ledger". */
  scenario: string;
  /** What was injected and when, e.g. "SIGKILL at 40 % of 200 requests, restarted after 3 s". */
  injected: string;
  /** What was checked and its figures, e.g. "verify 0 differences; 200/200 usage records". */
  checked: string;
  /** Whether every check of the scenario held. */
  passed: boolean;
}

/** Appends a row to this run's fault table (a no-op outside the fault suite). */
export function recordFault(row: FaultRow): void {
  const file = process.env.FAULT_TABLE_FILE;
  if (file === undefined || file === '') return;
  appendFileSync(file, `${JSON.stringify(row)}\n`);
}
