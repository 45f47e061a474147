// `pnpm lint`: ESLint with type information (eslint.config.js), knip's unused exports (knip.json,
// once as is and once in production mode, where tests are not roots) and dependency-cruiser's
// import cycles, type-only imports included (dependency-cruiser.cjs), over the whole repository,
// run side by side (knip and dependency-cruiser are child processes, so they take the second
// core while ESLint builds the TypeScript programs). Every finding fails the run: there is no
// list of exempt files. Prints the time each took.
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

/** dependency-cruiser's JSON report, the part read here: each cycle, as the files around it. */
interface CruiseReport {
  summary: {
    violations: Array<{ from: string; rule: { name: string; severity: string }; cycle?: Array<{ name: string }> }>;
  };
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

/** Runs one of this package's command-line tools from the repository root; resolves to its stdout once it exits 0 or 1. */
async function runTool(bin: string, args: string[]): Promise<string> {
  const child = spawn(resolve(toolDir, 'node_modules/.bin', bin), args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exitCode = await new Promise<number | null>((done, fail) => {
    child.on('error', fail);
    child.on('close', done);
  });
  // knip exits 1 when it found issues (dependency-cruiser's JSON report exits 0 either way);
  // anything else means the tool could not run.
  if (exitCode !== 0 && exitCode !== 1) throw new Error(`${bin} failed (exit ${String(exitCode)})`);
  return output;
}

/**
 * knip's unused exports. `production` leaves out the roots without a `!` in knip.json (tests,
 * test support, benches), so an export only they use is reported: production code must not keep
 * a function alive for its tests alone.
 */
async function runKnip(production: boolean): Promise<Finding[]> {
  const args = ['--config', 'tools/lint/knip.json', '--reporter', 'json', '--no-config-hints', '--no-progress'];
  if (production) args.push('--production');
  const report = JSON.parse(await runTool('knip', args)) as KnipReport;
  const mode = production ? ' outside tests' : '';
  return report.issues.flatMap((issue) =>
    Object.entries(knipKinds).flatMap(([kind, label]) => {
      const found = (issue[kind] ?? []) as Array<{ name: string; line: number; col: number }>;
      return found.map((item): Finding => ({
        file: issue.file,
        line: item.line,
        column: item.col,
        rule: production ? `knip/production/${kind}` : `knip/${kind}`,
        message: `${label} '${item.name}': nothing${mode} imports it (delete the export, or the code if nothing uses it; a test reaches it through the public function)`,
        severity: 'error',
      }));
    }),
  );
}

/** Import cycles between files, type-only imports included (dependency-cruiser.cjs says why). */
async function runCycles(): Promise<Finding[]> {
  const args = ['--config', 'tools/lint/dependency-cruiser.cjs', '--output-type', 'json', '--progress', 'none', '.'];
  const report = JSON.parse(await runTool('depcruise', args)) as CruiseReport;
  return report.summary.violations.map((violation): Finding => ({
    file: violation.from,
    line: 1,
    column: 1,
    rule: `dependency-cruiser/${violation.rule.name}`,
    message: `Import cycle: ${[violation.from, ...(violation.cycle ?? []).map((step) => step.name)].join(' → ')} (type-only imports count: move the shared type to a file both import)`,
    severity: violation.rule.severity === 'warn' ? 'warning' : 'error',
  }));
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

const [eslintRun, knipRun, productionRun, cycleRun] = await Promise.all([
  timed(runEslint),
  timed(() => runKnip(false)),
  timed(() => runKnip(true)),
  timed(runCycles),
]);
const findings = [...eslintRun.value.findings, ...knipRun.value, ...productionRun.value, ...cycleRun.value];
print(findings);
const errors = findings.filter((f) => f.severity === 'error');
process.stdout.write(
  `\nlint: ESLint ${eslintRun.value.files} files in ${eslintRun.seconds} s, knip in ${knipRun.seconds} s, ` +
    `knip --production in ${productionRun.seconds} s, dependency-cruiser in ${cycleRun.seconds} s; ` +
    `${errors.length} errors, ${findings.length - errors.length} warnings\n`,
);
// No exemptions: a warning (none of the rules is set to warn today) fails the run as an error does.
process.exitCode = findings.length > 0 ? 1 : 0;
