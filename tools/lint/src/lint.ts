// `pnpm lint`: ESLint with type information (eslint.config.js) and knip's unused exports
// (knip.json), over the whole repository, run side by side (knip is a child process, so it takes
// the second core while ESLint builds the TypeScript programs). Every finding fails the run:
// there is no list of exempt files. Prints the time each took.
import { spawn } from 'node:child_process';
import { relative, resolve } from 'node:path';
import { ESLint } from 'eslint';

/** One finding, from either tool, in the shape the summary prints. */
interface Finding {
  file: string;
  line: number;
  column: number;
  rule: string;
  message: string;
  severity: 'error' | 'warning';
}

/** knip's JSON report: per file, the unused exports of each kind. */
interface KnipReport {
  issues: Array<{ file: string } & Record<string, unknown>>;
}

const toolDir = resolve(import.meta.dirname, '..');
const repoRoot = resolve(toolDir, '../..');
const knipKinds: Record<string, string> = {
  exports: 'Unused export',
  types: 'Unused exported type',
  nsExports: 'Unused export in a namespace',
  nsTypes: 'Unused exported type in a namespace',
};

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; seconds: string }> {
  const started = performance.now();
  const value = await work();
  return { value, seconds: ((performance.now() - started) / 1000).toFixed(1) };
}

async function runEslint(): Promise<{ findings: Finding[]; files: number }> {
  const eslint = new ESLint({ cwd: repoRoot, overrideConfigFile: resolve(toolDir, 'eslint.config.js') });
  const results = await eslint.lintFiles(['.']);
  const findings = results.flatMap((result) =>
    result.messages.map((message): Finding => ({
      file: relative(repoRoot, result.filePath),
      line: message.line,
      column: message.column,
      rule: message.ruleId ?? 'eslint',
      message: message.message,
      severity: message.severity === 2 ? 'error' : 'warning',
    })),
  );
  return { findings, files: results.length };
}

async function runKnip(): Promise<Finding[]> {
  const args = ['--config', 'tools/lint/knip.json', '--reporter', 'json', '--no-config-hints', '--no-progress'];
  const child = spawn(resolve(toolDir, 'node_modules/.bin/knip'), args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exitCode = await new Promise<number | null>((done, fail) => {
    child.on('error', fail);
    child.on('close', done);
  });
  // knip exits 1 when it found issues, 2 when it could not run.
  if (exitCode !== 0 && exitCode !== 1) throw new Error(`knip failed (exit ${String(exitCode)})`);
  const report = JSON.parse(output) as KnipReport;
  return report.issues.flatMap((issue) =>
    Object.entries(knipKinds).flatMap(([kind, label]) => {
      const found = (issue[kind] ?? []) as Array<{ name: string; line: number; col: number }>;
      return found.map((item): Finding => ({
        file: issue.file,
        line: item.line,
        column: item.col,
        rule: `knip/${kind}`,
        message: `${label} '${item.name}': nothing imports it (delete the export, or the code if nothing uses it)`,
        severity: 'error',
      }));
    }),
  );
}

function print(findings: Finding[]): void {
  const byFile = Map.groupBy(
    findings.toSorted((a, b) => a.file.localeCompare(b.file) || a.line - b.line),
    (finding) => finding.file,
  );
  for (const [file, inFile] of byFile) {
    process.stdout.write(`\n${file}\n`);
    for (const f of inFile) process.stdout.write(`  ${f.line}:${f.column}  ${f.severity}  ${f.message}  ${f.rule}\n`);
  }
}

const [eslintRun, knipRun] = await Promise.all([timed(runEslint), timed(runKnip)]);
const findings = [...eslintRun.value.findings, ...knipRun.value];
print(findings);
const errors = findings.filter((f) => f.severity === 'error');
process.stdout.write(
  `\nlint: ESLint ${eslintRun.value.files} files in ${eslintRun.seconds} s, knip in ${knipRun.seconds} s; ` +
    `${errors.length} errors, ${findings.length - errors.length} warnings\n`,
);
// No exemptions: a warning (none of the rules is set to warn today) fails the run as an error does.
process.exitCode = findings.length > 0 ? 1 : 0;
