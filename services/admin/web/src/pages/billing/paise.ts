import { formatRupees, rupeesToMicros } from '../../format.ts';

// Payments count in paise (what the provider charges and invoices state); balances count in µ₹.
// One paisa is 10,000 µ₹, so a price in paise shows through the same bigint rupee formatting.

/** µ₹ in one paisa. */
const microsPerPaisa = 10_000n;

/** An amount of paise (a decimal string, as the API sends `_paise` fields) as rupees: "₹1,18,000.00". */
export function formatPaise(paise: string | bigint): string {
  return formatRupees(BigInt(paise) * microsPerPaisa);
}

/**
 * Rupees typed by a person ("1,180", "₹ 499.50") as paise, a decimal string ("118000"). Throws an
 * Error whose message can be shown beside the field when it is not an amount or finer than a paisa.
 */
export function rupeesToPaise(input: string): string {
  const micros = BigInt(rupeesToMicros(input));
  if (micros % microsPerPaisa !== 0n) throw new Error('At most two decimal places (one paisa)');
  return (micros / microsPerPaisa).toString();
}

/** Paise as an editable rupee amount, without grouping or ₹: "1180", "499.5". */
export function paiseInput(paise: string): string {
  const value = BigInt(paise);
  const fraction = (value % 100n).toString().padStart(2, '0').replace(/0+$/, '');
  return `${(value / 100n).toString()}${fraction === '' ? '' : `.${fraction}`}`;
}
