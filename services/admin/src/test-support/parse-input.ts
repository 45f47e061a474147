import type { z } from 'zod';
import { invalidRequest, validateInput, type InputLocation } from '../common/http/validation.ts';

/** Validates input with a schema as a route does (validateInput); throws `invalid_request` naming every bad field, so tests can read the value or the error. */
export function parseInput<Schema extends z.ZodType>(schema: Schema, value: unknown, location: InputLocation): z.output<Schema> {
  const result = validateInput(schema, value, location);
  if (result.ok) return result.value;
  throw invalidRequest(result.problems);
}
