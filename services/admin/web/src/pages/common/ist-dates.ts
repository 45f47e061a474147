/**
 * Calendar days in India Standard Time (UTC+05:30 all year, no daylight saving) as the
 * dashboard's date inputs give them, turned into the ms-since-epoch bounds the admin API filters by.
 */

/** IST's offset from UTC, ms (+05:30). */
const istOffsetMs = (5 * 60 + 30) * 60 * 1000;
const dayMs = 24 * 60 * 60 * 1000;

/** Parses a date input's value ("YYYY-MM-DD") to [year, month 1..12, day]; undefined when it is not a real date. */
function parseDay(value: string): [number, number, number] | undefined {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (match === null) return undefined;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const check = new Date(Date.UTC(year, month - 1, day));
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day) return undefined;
  return [year, month, day];
}

/** The instant an IST calendar day ("YYYY-MM-DD") begins, ms since the epoch; undefined for an empty or invalid value. */
function istDayStartMs(value: string): number | undefined {
  const day = parseDay(value);
  if (day === undefined) return undefined;
  return Date.UTC(day[0], day[1] - 1, day[2]) - istOffsetMs;
}

/** The instant after an IST calendar day ends (the next day's start, an exclusive bound), ms since the epoch. */
function istDayEndMs(value: string): number | undefined {
  const start = istDayStartMs(value);
  return start === undefined ? undefined : start + dayMs;
}

/** The IST calendar day ("YYYY-MM-DD") an instant (ms since the epoch) falls on: a date input's value. */
export function istDayOf(ms: number): string {
  return new Date(ms + istOffsetMs).toISOString().slice(0, 10);
}

/** The IST calendar day `days` days before the one `ms` falls on ("YYYY-MM-DD"). */
export function istDayBefore(ms: number, days: number): string {
  return istDayOf(ms - days * dayMs);
}

/**
 * The from/to query of a filter over IST days ("YYYY-MM-DD" or '' for no bound; the "to" day is
 * included, so its bound is the next day's start), ms since the epoch as strings; or why the two
 * days cannot make one.
 */
export function istWindowQuery(fromDay: string, toDay: string): { ok: true; query: { from?: string; to?: string } } | { ok: false; problem: string } {
  const from = fromDay === '' ? undefined : istDayStartMs(fromDay);
  if (fromDay !== '' && from === undefined) return { ok: false, problem: 'The "from" date is not a valid date.' };
  const to = toDay === '' ? undefined : istDayEndMs(toDay);
  if (toDay !== '' && to === undefined) return { ok: false, problem: 'The "to" date is not a valid date.' };
  if (from !== undefined && to !== undefined && from >= to) return { ok: false, problem: 'The "from" date must not be after the "to" date.' };
  return { ok: true, query: { ...(from === undefined ? {} : { from: String(from) }), ...(to === undefined ? {} : { to: String(to) }) } };
}
