/**
 * How far a parsed JSON value may go before the services refuse it: nesting depth, and what its
 * strings (keys included) may hold. The walk is iterative, so a body nested 500,000 levels deep
 * is measured without recursion; everything after it (zod, JSON.stringify, pino) is recursive and
 * only ever sees values within the depth limit.
 */

/** Most levels of arrays and objects a JSON body may nest (the outermost object is level 1). */
export const maxJsonDepth = 64;

/**
 * What the strings of a value must be:
 * - `any`: anything JSON can carry;
 * - `unicode`: well-formed Unicode (no lone surrogates, which no UTF-8 encoder can write);
 * - `storable`: `unicode` and no NUL, which PostgreSQL's `text` and `jsonb` refuse (22021, 22P05).
 */
export type TextRule = 'any' | 'unicode' | 'storable';

/** Why a value is refused. */
export type JsonProblemKind = 'too_deep' | 'nul' | 'lone_surrogate';

/** The first problem found in a value, with where it is. */
export interface JsonProblem {
  kind: JsonProblemKind;
  /** Keys and indexes from the root to the value at fault (for a key, to the object holding it plus the key). */
  path: Array<string | number>;
  /** True when the bad text is an object key rather than a value. */
  inKey: boolean;
}

/** Options of findJsonProblem. */
export interface JsonRules {
  /** Most nesting levels; default maxJsonDepth. */
  maxDepth?: number;
  /** What strings may hold; default `any`. */
  text?: TextRule;
}

/** One value still to visit, with a link to its parent so a path is built only for a problem. */
interface Pending {
  value: unknown;
  key: string | number | undefined;
  parent: Pending | undefined;
  depth: number;
}

function pathOf(node: Pending | undefined, extra?: string): Array<string | number> {
  const path: Array<string | number> = extra === undefined ? [] : [extra];
  for (let at = node; at !== undefined && at.key !== undefined; at = at.parent) path.unshift(at.key);
  return path;
}

/** The problem with one string under a rule, or undefined when it is fine. */
export function textProblem(text: string, rule: TextRule): 'nul' | 'lone_surrogate' | undefined {
  if (rule === 'any') return undefined;
  if (rule === 'storable' && text.includes('\u0000')) return 'nul';
  if (!text.isWellFormed()) return 'lone_surrogate';
  return undefined;
}

/** The first value (depth first) that breaks the rules, or undefined when the whole value keeps them. */
export function findJsonProblem(root: unknown, rules: JsonRules = {}): JsonProblem | undefined {
  const maxDepth = rules.maxDepth ?? maxJsonDepth;
  const rule = rules.text ?? 'any';
  const stack: Pending[] = [{ value: root, key: undefined, parent: undefined, depth: 0 }];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const { value } = node;
    if (typeof value === 'string') {
      const kind = textProblem(value, rule);
      if (kind !== undefined) return { kind, path: pathOf(node), inKey: false };
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    const depth = node.depth + 1;
    if (depth > maxDepth) return { kind: 'too_deep', path: pathOf(node), inKey: false };
    if (Array.isArray(value)) {
      for (let index = value.length - 1; index >= 0; index -= 1) {
        stack.push({ value: value[index], key: index, parent: node, depth });
      }
      continue;
    }
    const keys = Object.keys(value);
    for (let index = keys.length - 1; index >= 0; index -= 1) {
      const key = keys[index]!;
      const kind = textProblem(key, rule);
      if (kind !== undefined) return { kind, path: pathOf(node, key), inKey: true };
      stack.push({ value: (value as Record<string, unknown>)[key], key, parent: node, depth });
    }
  }
  return undefined;
}

/** A path as OpenAI names parameters and the admin names fields, e.g. `messages[0].content`; '' for the root. */
export function fieldPathOf(path: ReadonlyArray<string | number>): string {
  let name = '';
  for (const segment of path) {
    if (typeof segment === 'number') name += `[${segment}]`;
    else name += name === '' ? segment : `.${segment}`;
  }
  return name;
}

/** What a caller is told about a problem, after the field's name (e.g. `must not contain NUL characters`). */
export function problemMessage(problem: JsonProblem, maxDepth = maxJsonDepth): string {
  switch (problem.kind) {
    case 'too_deep':
      return `is nested deeper than ${maxDepth} levels`;
    case 'nul':
      return problem.inKey ? 'has a key containing a NUL character (U+0000), which is not accepted' : 'must not contain NUL characters (U+0000)';
    case 'lone_surrogate':
      return problem.inKey ? 'has a key that is not valid Unicode (a lone surrogate)' : 'must be valid Unicode text (it contains a lone surrogate)';
  }
}
