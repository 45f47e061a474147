import { rupeesToMicros } from '../../format.ts';

/** The request body a catalog form makes, or the field (API name) it cannot make and why. */
export type FormBody =
  | { ok: true; body: Record<string, unknown> }
  | { ok: false; param: string; problem: string };

/** Thrown inside a body builder to name the field at fault. */
export class FieldProblem extends Error {
  readonly param: string;
  constructor(param: string, message: string) {
    super(message);
    this.param = param;
  }
}

/** Runs a body builder: its body, or the field a FieldProblem named. */
export function bodyOrProblem(build: () => Record<string, unknown>): FormBody {
  try {
    return { ok: true, body: build() };
  } catch (caught) {
    if (caught instanceof FieldProblem) return { ok: false, param: caught.param, problem: caught.message };
    throw caught;
  }
}

/** Rupees as typed into µ₹ as a decimal string (exact: no floating point near money). */
export function microsOf(text: string, param: string): string {
  try {
    return rupeesToMicros(text);
  } catch (caught) {
    throw new FieldProblem(param, (caught as Error).message);
  }
}

/** A deployment's priority or weight as typed (the API checks its range and says so beside the field). */
export function rankOf(text: string, param: string): number {
  const trimmed = text.trim();
  if (!/^\d{1,4}$/.test(trimmed)) throw new FieldProblem(param, 'Enter a whole number.');
  return Number(trimmed);
}
