/**
 * deploy/Dockerfile checked without Docker (none runs here or in CI): multi-stage, the final stage
 * non-root by the same numeric ids the manifests require, every build-context source it copies
 * exists and passes deploy/Dockerfile.dockerignore, every file a container runs is in the image,
 * the test-only workspace packages it leaves out are no runtime dependency of a service, Node is
 * the version the tests run on, from a base image given as a build argument (the public
 * node:<version>-slim by default; deploy/image/build.sh passes a local stand-in), and a build
 * proxy's CA never reaches the image. docs/deploy.md, "Building the image", says how it is built.
 */
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { overlayNames, renderOverlay, workloads } from './rendered-manifests.ts';

const repoRoot = new URL('../../', import.meta.url);
const dockerfileText = readFileSync(new URL('deploy/Dockerfile', repoRoot), 'utf8');
const dockerignoreText = readFileSync(new URL('deploy/Dockerfile.dockerignore', repoRoot), 'utf8');

/** One Dockerfile instruction: its keyword and its arguments (continuation lines joined). */
interface Instruction { keyword: string; args: string }
/** One build stage: its name and its instructions. */
interface Stage { name: string | undefined; from: string; instructions: Instruction[] }

/** Splits a Dockerfile into stages of instructions (comments dropped, `\` continuations joined). */
function parseDockerfile(text: string): { args: Map<string, string>; stages: Stage[] } {
  const logicalLines = text.replace(/\\\n/g, ' ').split('\n').map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'));
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  for (const line of logicalLines) {
    const [keyword, ...rest] = line.split(/\s+/);
    const instruction = { keyword: keyword!.toUpperCase(), args: rest.join(' ') };
    if (instruction.keyword === 'FROM') {
      const match = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(instruction.args);
      stages.push({ name: match?.[2], from: match?.[1] ?? '', instructions: [] });
    } else if (stages.length === 0 && instruction.keyword === 'ARG') {
      const [name, value] = instruction.args.split('=');
      args.set(name!, value ?? '');
    } else stages.at(-1)?.instructions.push(instruction);
  }
  return { args, stages };
}

/** A COPY instruction's sources, destination and --from stage. */
function copyOf(instruction: Instruction): { from: string | undefined; sources: string[]; destination: string } {
  if (instruction.args.startsWith('[')) throw new Error('COPY in JSON form is not read by this test');
  const words = instruction.args.split(/\s+/);
  const from = words.find((word) => word.startsWith('--from='))?.slice('--from='.length);
  const paths = words.filter((word) => !word.startsWith('--'));
  return { from, sources: paths.slice(0, -1), destination: paths.at(-1)! };
}

/** A .dockerignore pattern as a regular expression over a context-relative path (`**` any depth, `*` within a segment). */
function patternRegExp(pattern: string): RegExp {
  const escaped = pattern.replace(/\/$/, '').split('**').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')).join('.*');
  return new RegExp(`^${escaped}(/.*)?$`);
}

/** Whether the build context keeps a path: the last matching pattern decides (`!` re-includes). */
function contextKeeps(path: string): boolean {
  let kept = true;
  for (const raw of dockerignoreText.split('\n').map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('#'))) {
    const negated = raw.startsWith('!');
    if (patternRegExp(negated ? raw.slice(1) : raw).test(path.replace(/^\.\//, '').replace(/\/$/, ''))) kept = negated;
  }
  return kept;
}

const { args, stages } = parseDockerfile(dockerfileText);
const finalStage = stages.at(-1)!;

describe('deploy/Dockerfile', () => {
  it('builds in stages and runs the last one as the numeric non-root user the manifests require', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const user = finalStage.instructions.filter((instruction) => instruction.keyword === 'USER').at(-1)?.args;
    expect(user).toMatch(/^\d+:\d+$/);
    const [uid, gid] = user!.split(':').map(Number);
    expect(uid).toBeGreaterThan(0);
    for (const overlay of overlayNames) {
      for (const workload of workloads(renderOverlay(overlay))) {
        const pod = workload.spec.template.spec.securityContext;
        expect([pod.runAsUser, pod.runAsGroup], `${overlay} ${workload.metadata.name}`).toEqual([uid, gid]);
      }
    }
  });

  it('copies into the final stage only from the build stage, never from the build context', () => {
    const copies = finalStage.instructions.filter((instruction) => instruction.keyword === 'COPY' || instruction.keyword === 'ADD').map(copyOf);
    expect(copies.length).toBeGreaterThan(0);
    const stageNames = stages.slice(0, -1).map((stage) => stage.name);
    for (const copy of copies) expect(stageNames, copy.sources.join(' ')).toContain(copy.from);
  });

  it('every build-context source exists in the repository and passes Dockerfile.dockerignore', () => {
    const sources = stages.flatMap((stage) => stage.instructions.filter((instruction) => instruction.keyword === 'COPY').map(copyOf)).filter((copy) => copy.from === undefined).flatMap((copy) => copy.sources);
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) {
      expect(existsSync(new URL(source, repoRoot)), source).toBe(true);
      expect(contextKeeps(source), `${source} is excluded by the dockerignore`).toBe(true);
    }
    // And what must never enter the context stays out.
    for (const path of ['node_modules/x', 'services/proxy/node_modules/x', '.git/config', '.data/ledger', 'tests/e2e/x.test.ts', 'docs/deploy.md', 'services/admin/dist-types/a.d.ts']) {
      expect(contextKeeps(path), path).toBe(false);
    }
  });

  it('every file a container runs (the CMD, each manifest command) is in a directory the final stage holds', () => {
    const finalPaths = finalStage.instructions.filter((instruction) => instruction.keyword === 'COPY').map(copyOf).map((copy) => copy.destination.replace(/\/$/, ''));
    const cmd = JSON.parse(finalStage.instructions.filter((instruction) => instruction.keyword === 'CMD').at(-1)!.args) as string[];
    const runFiles = [cmd[1]!, ...overlayNames.flatMap((overlay) => workloads(renderOverlay(overlay)).map((workload) => workload.spec.template.spec.containers[0].command[1] as string))];
    for (const file of new Set(runFiles)) {
      expect(existsSync(new URL(file, repoRoot)), file).toBe(true);
      expect(finalPaths.some((path) => file.startsWith(`${path}/`)), `${file} is not under ${finalPaths.join(', ')}`).toBe(true);
    }
  });

  it('the workspace packages left out of the image are dependencies of no service, and every removed path exists', () => {
    const excluded = [...dockerfileText.matchAll(/--filter "!(@gateway\/[a-z-]+)"/g)].map((match) => match[1]!);
    expect(excluded.length).toBeGreaterThan(0);
    for (const service of ['proxy', 'admin', 'ledger']) {
      const manifest = JSON.parse(readFileSync(new URL(`services/${service}/package.json`, repoRoot), 'utf8')) as { dependencies: Record<string, string> };
      for (const name of excluded) expect(Object.keys(manifest.dependencies), `${service} depends on ${name}`).not.toContain(name);
    }
    const removed = /RUN rm -rf ([^&]+)&&/.exec(dockerfileText.replace(/\\\n/g, ' '))![1]!.trim().split(/\s+/);
    for (const path of removed) expect(existsSync(new URL(path, repoRoot)), `${path} (renamed? the image would keep its replacement)`).toBe(true);
    for (const name of excluded) expect(removed, name).toContain(`packages/${name.slice('@gateway/'.length)}`);
  });

  it('builds FROM a base given as a build argument whose default is the public Node image of the version the tests run on', () => {
    const rootManifest = JSON.parse(readFileSync(new URL('package.json', repoRoot), 'utf8')) as { devDependencies: Record<string, string> };
    expect(args.get('NODE_VERSION')).toBe(rootManifest.devDependencies.node);
    // The default a user pulls: Docker Hub's official image, by a short name that any builder resolves there.
    expect(args.get('NODE_IMAGE')?.replace('${NODE_VERSION}', args.get('NODE_VERSION')!)).toBe(`node:${rootManifest.devDependencies.node}-slim`);
    for (const stage of stages) expect(stage.from).toBe('${NODE_IMAGE}');
    // deploy/image/build.sh passes the local stand-in by that name.
    expect(readFileSync(new URL('deploy/image/build.sh', repoRoot), 'utf8')).toContain('--build-arg "NODE_IMAGE=$NODE_IMAGE"');
  });

  it('lets a build behind a TLS-intercepting proxy trust its CA in the build stage only, never in the image', () => {
    const declaring = stages.filter((stage) => stage.instructions.some((instruction) => instruction.keyword === 'ARG' && instruction.args === 'NODE_EXTRA_CA_CERTS'));
    expect(declaring.map((stage) => stage.name)).toEqual(['build']);
    const instructions = stages.flatMap((stage) => stage.instructions);
    expect(instructions.filter((instruction) => instruction.keyword === 'ENV' && instruction.args.includes('NODE_EXTRA_CA_CERTS'))).toEqual([]);
    expect(instructions.filter((instruction) => instruction.keyword === 'COPY' && /\.(crt|pem)\b/.test(instruction.args))).toEqual([]);
  });

  it('sets no secret', () => {
    const settings = stages.flatMap((stage) => stage.instructions).filter((instruction) => instruction.keyword === 'ENV' || instruction.keyword === 'ARG').map((instruction) => instruction.args);
    for (const setting of settings) expect(setting).not.toMatch(/KEY|SECRET|TOKEN|PASSWORD|DATABASE_URL|REDIS_URL/i);
  });
});
