// The package graph of the workspace, read from the imports themselves (not from package.json:
// the root's devDependencies make every @gateway package resolvable from everywhere, so a
// missing declaration would not stop an import). dependency-cruiser sees cycles between files;
// this sees the coarser one, package A importing B while B (through any chain) imports A,
// which would make the packages one build unit in disguise even when no file cycle exists.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import type { Rule } from 'eslint';

/** One workspace package: its npm name and its folder (absolute path). */
interface WorkspacePackage {
  name: string;
  dir: string;
}

/** The workspace's packages and which packages each one imports (by npm name). */
interface PackageGraph {
  packages: WorkspacePackage[];
  edges: Map<string, Set<string>>;
}

const WORKSPACE_GLOBS = ['packages', 'services', 'tools'];
const SKIPPED_DIRS = new Set(['node_modules', 'dist-types', '.data', 'coverage']);
// Static imports, re-exports, side-effect imports and dynamic imports with a literal specifier.
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g;

function listWorkspacePackages(repoRoot: string): WorkspacePackage[] {
  const found: WorkspacePackage[] = [];
  for (const parent of WORKSPACE_GLOBS) {
    const parentDir = join(repoRoot, parent);
    if (!existsSync(parentDir)) continue;
    for (const entry of readdirSync(parentDir)) {
      const manifest = join(parentDir, entry, 'package.json');
      if (!existsSync(manifest)) continue;
      const { name } = JSON.parse(readFileSync(manifest, 'utf8')) as { name: string };
      found.push({ name, dir: join(parentDir, entry) });
    }
  }
  return found;
}

function listTypeScriptFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir)) {
    if (SKIPPED_DIRS.has(entry)) continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) files.push(...listTypeScriptFiles(path));
    else if (path.endsWith('.ts')) files.push(path);
  }
  return files;
}

function packageOfPath(packages: WorkspacePackage[], path: string): WorkspacePackage | undefined {
  return packages.find((p) => path === p.dir || path.startsWith(p.dir + sep));
}

/** The workspace package a specifier written in `fromFile` lands in, if it lands in one. */
function targetPackage(
  packages: WorkspacePackage[],
  fromFile: string,
  specifier: string,
): WorkspacePackage | undefined {
  if (specifier.startsWith('.')) return packageOfPath(packages, resolve(dirname(fromFile), specifier));
  return packages.find((p) => specifier === p.name || specifier.startsWith(p.name + '/'));
}

function buildGraph(repoRoot: string): PackageGraph {
  const packages = listWorkspacePackages(repoRoot);
  const edges = new Map<string, Set<string>>(packages.map((p) => [p.name, new Set<string>()]));
  for (const pkg of packages) {
    for (const file of listTypeScriptFiles(pkg.dir)) {
      for (const match of readFileSync(file, 'utf8').matchAll(SPECIFIER)) {
        const target = targetPackage(packages, file, match[1] ?? '');
        if (target !== undefined && target.name !== pkg.name) edges.get(pkg.name)?.add(target.name);
      }
    }
  }
  return { packages, edges };
}

/** A path of package names from `from` to `to` through the graph, or undefined when none. */
function findPath(graph: PackageGraph, from: string, to: string): string[] | undefined {
  const previous = new Map<string, string>([[from, from]]);
  const queue = [from];
  while (queue.length > 0) {
    const current = queue.shift() as string;
    if (current === to) {
      const path = [to];
      while (path[0] !== from) path.unshift(previous.get(path[0] as string) as string);
      return path;
    }
    for (const next of graph.edges.get(current) ?? []) {
      if (!previous.has(next)) {
        previous.set(next, current);
        queue.push(next);
      }
    }
  }
  return undefined;
}

const graphs = new Map<string, PackageGraph>();

/** Reports an import of a workspace package that already depends, directly or not, on the importer's package. */
export const noPackageCycle: Rule.RuleModule = {
  meta: {
    type: 'problem',
    docs: { description: 'Workspace packages must import each other in one direction only' },
    schema: [],
    messages: {
      cycle:
        '{{from}} imports {{to}}, but {{to}} already depends on {{from}} ({{path}}): packages must form a one-way graph; move the shared code down into a package both can import.',
    },
  },
  create(context) {
    const repoRoot = context.cwd;
    let graph = graphs.get(repoRoot);
    if (graph === undefined) {
      graph = buildGraph(repoRoot);
      graphs.set(repoRoot, graph);
    }
    const packageGraph = graph;
    const own = packageOfPath(packageGraph.packages, context.filename);
    if (own === undefined) return {};
    const check = (node: Rule.Node, specifier: unknown): void => {
      if (typeof specifier !== 'string') return;
      const target = targetPackage(packageGraph.packages, context.filename, specifier);
      if (target === undefined || target.name === own.name) return;
      const back = findPath(packageGraph, target.name, own.name);
      if (back === undefined) return;
      context.report({
        node,
        messageId: 'cycle',
        data: { from: own.name, to: target.name, path: [own.name, ...back].join(' -> ') },
      });
    };
    return {
      ImportDeclaration: (node) => check(node, node.source.value),
      ExportNamedDeclaration: (node) => check(node, node.source?.value),
      ExportAllDeclaration: (node) => check(node, node.source.value),
      ImportExpression: (node) => check(node, node.source.type === 'Literal' ? node.source.value : undefined),
    };
  },
};

