/**
 * Input rules shared by the ledger's operations. Each check returns a problem sentence naming
 * the proto field (the contract callers see), or undefined; operations collect every problem
 * of a request so one `detail` tells the caller all that is wrong.
 */

import { maxAmountMicros } from './ledger-types.ts';

/** Longest id (reservation, credit, organisation, project, model slug, request), in characters. */
const maxIdLength = 128;

/** Longest free-text reason kept on a movement or reservation, in characters. */
const maxReasonLength = 500;

/** Shortest Reserve lifetime, ms: shorter would expire before a typical upstream answers. */
const minReserveTtlMs = 1_000n;

/** Longest Reserve lifetime, ms (24 h): money must not stay held for days by a dead caller. */
const maxReserveTtlMs = 86_400_000n;

/** Printable ASCII without spaces: ids end up in logs, URLs and SQL, and must compare byte-for-byte. */
const idPattern = /^[\x21-\x7e]+$/;

/** Control characters (including NUL, which PostgreSQL text refuses) are not allowed in free text. */
const controlCharacterPattern = /[\u0000-\u001f\u007f]/;

/** Checks a required id: 1..128 printable ASCII characters without spaces. */
export function idProblem(field: string, value: string): string | undefined {
  if (value.length === 0) return `${field} must not be empty`;
  if (value.length > maxIdLength) return `${field} must be at most ${maxIdLength} characters`;
  if (!idPattern.test(value)) return `${field} must be printable ASCII without spaces`;
  return undefined;
}

/** Checks an optional id: empty, or the same rules as a required one. */
export function optionalIdProblem(field: string, value: string): string | undefined {
  return value === '' ? undefined : idProblem(field, value);
}

/** Checks an amount that must be positive: 1..2^62 µ₹. */
export function positiveAmountProblem(field: string, value: bigint): string | undefined {
  if (value <= 0n) return `${field} must be positive`;
  if (value > maxAmountMicros) return `${field} must be at most ${maxAmountMicros}`;
  return undefined;
}

/** Checks an amount or count that may be zero: 0..2^62. */
export function nonNegativeAmountProblem(field: string, value: bigint): string | undefined {
  if (value < 0n) return `${field} must not be negative`;
  if (value > maxAmountMicros) return `${field} must be at most ${maxAmountMicros}`;
  return undefined;
}

/** Checks optional free text: at most 500 characters, no control characters. */
export function reasonProblem(field: string, value: string): string | undefined {
  if (value.length > maxReasonLength) return `${field} must be at most ${maxReasonLength} characters`;
  if (controlCharacterPattern.test(value)) return `${field} must not contain control characters`;
  return undefined;
}

/** Checks a Reserve lifetime: 1 s .. 24 h, in ms. */
export function reserveTtlProblem(field: string, valueMs: bigint): string | undefined {
  if (valueMs < minReserveTtlMs || valueMs > maxReserveTtlMs) {
    return `${field} must be between ${minReserveTtlMs} and ${maxReserveTtlMs} ms`;
  }
  return undefined;
}

/** Keeps the problems that were found, dropping the checks that passed. */
export function problemsOf(...checks: Array<string | undefined>): string[] {
  return checks.filter((problem): problem is string => problem !== undefined);
}
