// Pure rules of document serials and IST dates: the counter that numbers documents is
// invoice-serial-store.ts.

/** A document series: T tax invoices, R receipt vouchers, C credit notes (each numbered on its own). */
export type DocumentSeries = 'T' | 'R' | 'C';

/** The longest serial Rule 46(b) of the CGST Rules allows, characters. */
const maxSerialLength = 16;

/** Digits a serial's number is padded to (it grows past this while the serial still fits 16). */
const serialNumberDigits = 6;

/** India Standard Time is UTC+05:30 all year (no daylight saving). */
const istOffsetMs = (5 * 60 + 30) * 60_000;

/** A moment's calendar date in IST, as UTC fields of a shifted Date (year, month 0-11, day). */
function istCalendar(at: Date): { year: number; month: number; day: number } {
  const shifted = new Date(at.getTime() + istOffsetMs);
  return { year: shifted.getUTCFullYear(), month: shifted.getUTCMonth(), day: shifted.getUTCDate() };
}

/** The Indian financial year (April-March, in IST) a moment falls in, e.g. 2027-03-31T18:29:59Z → "2026-27". */
export function financialYearOf(at: Date): string {
  const { year, month } = istCalendar(at);
  const startYear = month >= 3 ? year : year - 1; // April is month 3
  return `${startYear}-${String((startYear + 1) % 100).padStart(2, '0')}`;
}

/** A moment's date in IST as YYYY-MM-DD (the "date of issue" on a document). */
export function istDate(at: Date): string {
  const { year, month, day } = istCalendar(at);
  return `${year}-${String(month + 1).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

/** A moment's month in IST as YYYY-MM (a monthly usage invoice's period). */
export function istMonth(at: Date): string {
  return istDate(at).slice(0, 7);
}

/**
 * A document's serial: prefix, financial year as four digits, series letter, '-', number padded
 * to six digits, e.g. GW2627T-000001 (14 characters; a four-letter prefix makes 16). Throws when
 * the serial would be longer than 16 characters (a financial year past 9,999,999 documents with a
 * two-letter prefix), rather than issue a document the rules do not allow.
 */
export function formatSerial(prefix: string, financialYear: string, series: DocumentSeries, sequenceNumber: bigint): string {
  if (!/^[A-Z]{1,4}$/.test(prefix)) throw new RangeError('a serial prefix is 1..4 capital letters');
  const years = `${financialYear.slice(2, 4)}${financialYear.slice(5, 7)}`;
  const serial = `${prefix}${years}${series}-${sequenceNumber.toString().padStart(serialNumberDigits, '0')}`;
  if (serial.length > maxSerialLength) throw new RangeError(`serial ${serial} is longer than ${maxSerialLength} characters`);
  return serial;
}

/** The instant an IST month ('YYYY-MM') begins: its first day at 00:00 IST. */
export function istMonthStart(month: string): Date {
  const [year, monthNumber] = month.split('-').map(Number) as [number, number];
  return new Date(Date.UTC(year, monthNumber - 1, 1) - istOffsetMs);
}

/** The IST month after one ('2026-12' → '2027-01'). */
export function nextIstMonth(month: string): string {
  return istMonth(new Date(istMonthStart(month).getTime() + 32 * 24 * 60 * 60_000));
}
