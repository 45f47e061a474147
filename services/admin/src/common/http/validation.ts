import { GatewayError } from '@gateway/errors';
import { findJsonProblem, problemMessage } from '@gateway/http-guard';
import type { z } from 'zod';

/** Where a validated value came from; names the whole value when an issue has no field path. */
export type InputLocation = 'body' | 'query' | 'header';

const expectedNames: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
  object: 'a JSON object',
  array: 'an array',
  bigint: 'a whole number',
};

/**
 * Messages for issues a schema did not word itself. Schema-level messages take precedence,
 * so this only fills in the generic cases (missing, wrong type, out of range).
 */
function fallbackMessage(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      return issue.input === undefined ? 'is required' : `must be ${expectedNames[issue.expected] ?? issue.expected}`;
    case 'invalid_value':
      return `must be one of ${issue.values.map((value) => JSON.stringify(value)).join(', ')}`;
    case 'too_small':
      return issue.origin === 'string' ? `must be at least ${issue.minimum} characters` : `must be at least ${issue.minimum}`;
    case 'too_big':
      return issue.origin === 'string' ? `must be at most ${issue.maximum} characters` : `must be at most ${issue.maximum}`;
    default:
      return undefined;
  }
}

function fieldName(path: readonly PropertyKey[], location: InputLocation): string {
  if (path.length === 0) return location;
  return path.reduce<string>((name, key) => (typeof key === 'number' ? `${name}[${key}]` : name === '' ? String(key) : `${name}.${String(key)}`), '');
}

/** One problem with one field, as shown to the caller. */
export interface FieldProblem {
  field: string;
  message: string;
}

/** Turns zod issues into field problems: one per field, unknown keys each named. */
function fieldProblems(issues: readonly z.core.$ZodIssue[], location: InputLocation): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      const what = location === 'query' ? 'is not a known query parameter' : 'is not a known field';
      for (const key of issue.keys) problems.push({ field: fieldName([...issue.path, key], location), message: what });
    } else if (issue.code === 'invalid_type' && issue.path.length === 0 && location === 'body') {
      problems.push({ field: 'body', message: 'must be a JSON object' });
    } else {
      problems.push({ field: fieldName(issue.path, location), message: issue.message });
    }
  }
  return problems;
}

/** The `invalid_request` error for a list of problems: the message names every field, `param` the first. */
export function invalidRequest(problems: readonly FieldProblem[]): GatewayError {
  const listed = problems.map((problem) => `${problem.field}: ${problem.message}`).join('; ');
  return new GatewayError('invalid_request', { publicMessage: `Invalid request: ${listed}.`, param: problems[0]?.field });
}

/** The outcome of validating one input: its parsed value, or the problems with its fields. */
export type Validation<Value> = { ok: true; value: Value } | { ok: false; problems: FieldProblem[] };

/**
 * The problem with the text of an input, if any: a NUL character (PostgreSQL's text and jsonb
 * refuse U+0000, which surfaced as a 500) or a lone surrogate (not Unicode; the UTF-8 encoder
 * would silently store U+FFFD instead) in any string or key, at any depth. Checked here, before
 * any schema, so every route and every location (body, query, header) gets it at once.
 */
function textProblems(value: unknown, location: InputLocation): FieldProblem[] {
  const problem = findJsonProblem(value, { text: 'storable', maxDepth: Number.POSITIVE_INFINITY });
  if (problem === undefined) return [];
  return [{ field: fieldName(problem.path, location), message: problemMessage(problem) }];
}

/** Validates input with a schema, wording generic issues with the API's messages. */
export function validateInput<Schema extends z.ZodType>(schema: Schema, value: unknown, location: InputLocation): Validation<z.output<Schema>> {
  const unstorable = textProblems(value, location);
  if (unstorable.length > 0) return { ok: false, problems: unstorable };
  const result = schema.safeParse(value, { error: fallbackMessage });
  return result.success ? { ok: true, value: result.data } : { ok: false, problems: fieldProblems(result.error.issues, location) };
}
