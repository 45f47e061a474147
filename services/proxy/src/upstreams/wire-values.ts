// Reading values out of an upstream's JSON, which the gateway never trusts: one home for the
// checks every adapter, stream decoder and usage reader makes.

/** Whether a wire value is a JSON object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A wire value as an object, or undefined when it is not one. */
export function objectOf(value: unknown): Record<string, unknown> | undefined {
  return isObject(value) ? value : undefined;
}

/** A token count the wire gives, or 0 when it is absent, not a non-negative safe integer, or not a number at all. */
export function countOf(value: unknown): number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : 0;
}
