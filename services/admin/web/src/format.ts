// Display rules of the dashboard: money in rupees with Indian digit grouping, computed from the
// API's decimal strings of micro-rupees with bigint arithmetic (never a float near money), and
// times in India Standard Time.

/** Micro-rupees in one rupee. */
const microsPerRupee = 1_000_000n;

/** Groups an unsigned run of digits the Indian way: the last three, then pairs (12,34,56,789). */
function groupIndian(digits: string): string {
  if (digits.length <= 3) return digits;
  const head = digits.slice(0, -3);
  const pairs = head.replace(/\B(?=(\d{2})+(?!\d))/g, ',');
  return `${pairs},${digits.slice(-3)}`;
}

/** Reads an amount of µ₹ given as a bigint or a decimal string of digits (optionally negative). */
function toMicros(micros: string | bigint): bigint {
  if (typeof micros === 'bigint') return micros;
  if (!/^-?\d+$/.test(micros)) throw new Error(`not an amount of micro-rupees: "${micros}"`);
  return BigInt(micros);
}

/** The decimals an amount of µ₹ needs to be shown exactly: 2 (paise) at least, 6 (a µ₹) at most. */
function exactFractionDigits(micros: bigint): number {
  const fraction = (micros < 0n ? -micros : micros) % microsPerRupee;
  return Math.max(2, fraction.toString().padStart(6, '0').replace(/0+$/, '').length);
}

/**
 * An amount of micro-rupees as rupees, Indian grouping, "-₹12.50" when negative. Without
 * `fractionDigits` the text is exact (the dashboard's rule): paise as usual ("₹1,00,000.00",
 * "₹12.50"), and more decimals only when the amount is not a whole paisa ("₹0.00029",
 * "₹1,234.567891"), trailing zeros past the paise trimmed, so ₹0.00029 never shows as ₹0.00.
 * With `fractionDigits` (0..6) it rounds half away from zero to that many places (for axes only).
 */
export function formatRupees(micros: string | bigint, fractionDigits?: number): string {
  const value = toMicros(micros);
  const digits = fractionDigits ?? exactFractionDigits(value);
  if (!Number.isInteger(digits) || digits < 0 || digits > 6) throw new RangeError('fractionDigits must be 0..6');
  const negative = value < 0n;
  const magnitude = negative ? -value : value;
  const unit = 10n ** BigInt(6 - digits);
  const rounded = (magnitude + unit / 2n) / unit; // in units of 10^-digits rupees
  const scale = 10n ** BigInt(digits);
  const rupees = groupIndian((rounded / scale).toString());
  const fraction = digits === 0 ? '' : `.${(rounded % scale).toString().padStart(digits, '0')}`;
  const sign = negative && rounded !== 0n ? '-' : '';
  return `${sign}₹${rupees}${fraction}`;
}

/**
 * Parses rupees typed by a person ("1,00,000.50", "₹ 250", "0.000001") into µ₹ as a decimal
 * string ("100000500000"). Commas may group the whole part in any style; at most six decimals
 * (a micro-rupee). Throws an Error whose message can be shown beside the field on anything else,
 * including negative amounts.
 */
export function rupeesToMicros(input: string): string {
  const text = input.trim().replace(/^₹\s*/, '');
  const match = /^(\d{1,3}(?:,\d{2,3})*|\d+)(?:\.(\d*))?$/.exec(text);
  if (text === '' || match === null) throw new Error('Enter an amount in rupees, such as 1,00,000.50');
  const whole = match[1]!.replaceAll(',', '');
  const fraction = match[2] ?? '';
  if (fraction.length > 6) throw new Error('At most six decimal places (one micro-rupee)');
  return (BigInt(whole) * microsPerRupee + BigInt(fraction.padEnd(6, '0') || '0')).toString();
}

const monthNames = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** The calendar fields of an instant in Asia/Kolkata (numeric, so no locale's month spelling leaks in). */
const istFields = new Intl.DateTimeFormat('en-GB', {
  timeZone: 'Asia/Kolkata', year: 'numeric', month: 'numeric', day: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23',
});

/** An instant (a Date, ms since the epoch, or an ISO-8601 string) in India Standard Time: "24 Nov 2026, 17:45 IST". */
export function formatIst(dateOrMs: Date | number | string): string {
  const date = dateOrMs instanceof Date ? dateOrMs : new Date(dateOrMs);
  if (Number.isNaN(date.getTime())) return '—';
  const part = Object.fromEntries(istFields.formatToParts(date).map((p) => [p.type, p.value]));
  return `${Number(part.day)} ${monthNames[Number(part.month) - 1]} ${part.year}, ${part.hour}:${part.minute} IST`;
}

/** A count (requests, tokens) with Indian grouping: 1234567 → "12,34,567". */
export function formatCount(n: number | bigint | string): string {
  const text = typeof n === 'string' ? n : Number.isFinite(n) || typeof n === 'bigint' ? BigInt(n).toString() : String(n);
  if (!/^-?\d+$/.test(text)) return text;
  return text.startsWith('-') ? `-${groupIndian(text.slice(1))}` : groupIndian(text);
}
