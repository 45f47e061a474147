import { existsSync, readFileSync, rmSync } from 'node:fs';
import type { Reporter } from 'vitest/node';
import type { FaultRow } from './fault-table.ts';

/** Prints the fault suite's table (rows recorded by recordFault) after vitest's own summary. */
export default class FaultTableReporter implements Reporter {
  onTestRunEnd(): void {
    const file = process.env.FAULT_TABLE_FILE;
    if (file === undefined || !existsSync(file)) return;
    const rows = readFileSync(file, 'utf8').split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as FaultRow);
    rmSync(file, { force: true });
    const lines = ['', '| scenario | injected | checked | result |', '|---|---|---|---|'];
    for (const row of rows) lines.push(`| ${row.scenario} | ${row.injected} | ${row.checked} | ${row.passed ? 'ok' : 'FAILED'} |`);
    process.stdout.write(`${lines.join('\n')}\n`);
  }
}
