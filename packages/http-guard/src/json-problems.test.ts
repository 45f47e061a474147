import { describe, expect, it } from 'vitest';
import { fieldPathOf, findJsonProblem, maxJsonDepth, problemMessage, textProblem } from './json-problems.ts';

/** `levels` arrays inside each other, built without recursion. */
function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let level = 0; level < levels; level += 1) value = [value];
  return value;
}

describe('textProblem', () => {
  it('finds NUL only under storable, lone surrogates under unicode and storable', () => {
    expect(textProblem('a\u0000b', 'any')).toBeUndefined();
    expect(textProblem('a\u0000b', 'unicode')).toBeUndefined();
    expect(textProblem('a\u0000b', 'storable')).toBe('nul');
    expect(textProblem('a\ud800b', 'unicode')).toBe('lone_surrogate');
    expect(textProblem('a\udc00', 'storable')).toBe('lone_surrogate');
    expect(textProblem('emoji \u{1f600} ok, ऄ too', 'storable')).toBeUndefined();
  });
});

describe('findJsonProblem', () => {
  it('names the path of the first bad string, in values and in keys', () => {
    const body = { name: 'ok', upstream: { model: 'x', tags: ['fine', 'bad\u0000'] } };
    const problem = findJsonProblem(body, { text: 'storable' })!;
    expect(problem).toEqual({ kind: 'nul', path: ['upstream', 'tags', 1], inKey: false });
    expect(fieldPathOf(problem.path)).toBe('upstream.tags[1]');
    expect(problemMessage(problem)).toMatch(/NUL/);
    expect(findJsonProblem({ a: { 'k\ud800': 1 } }, { text: 'unicode' })).toEqual({ kind: 'lone_surrogate', path: ['a', 'k\ud800'], inKey: true });
  });

  it('accepts a value at the depth limit and refuses one level more, without recursion', () => {
    expect(findJsonProblem(nested(maxJsonDepth))).toBeUndefined();
    expect(findJsonProblem(nested(maxJsonDepth + 1))?.kind).toBe('too_deep');
    // Far deeper than any call stack: measured iteratively, found at the limit.
    const problem = findJsonProblem(nested(500_000))!;
    expect(problem.kind).toBe('too_deep');
    expect(problem.path).toHaveLength(maxJsonDepth);
  });

  it('passes scalars, empty containers and __proto__ keys as data', () => {
    expect(findJsonProblem(null)).toBeUndefined();
    expect(findJsonProblem(JSON.parse('{"__proto__": {"x": "\\u0000"}}'), { text: 'storable' })).toEqual({ kind: 'nul', path: ['__proto__', 'x'], inKey: false });
    expect(findJsonProblem({ a: [], b: {} }, { maxDepth: 2 })).toBeUndefined();
    expect(fieldPathOf([])).toBe('');
  });
});
