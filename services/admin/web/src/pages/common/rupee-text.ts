import { formatRupees } from '../../format.ts';

/**
 * Rupee text for the pages that show or edit exact amounts (prices per million tokens can be
 * finer than a paisa), from µ₹ decimal strings with bigint arithmetic.
 */

/** µ₹ shown exactly in rupees with Indian grouping: "₹1,00,000.00", "₹0.000125" (formatRupees' exact rule). */
export function exactRupees(micros: string): string {
  return formatRupees(micros);
}

/** µ₹ as an editable rupee amount, exact and without grouping or ₹: "1500.5", "0.000125", "20". */
export function rupeeInput(micros: string): string {
  const value = BigInt(micros);
  const sign = value < 0n ? '-' : '';
  const magnitude = value < 0n ? -value : value;
  const fraction = (magnitude % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return `${sign}${(magnitude / 1_000_000n).toString()}${fraction === '' ? '' : `.${fraction}`}`;
}
