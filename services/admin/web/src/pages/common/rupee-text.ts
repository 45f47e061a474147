import { formatRupees } from '../../format.ts';

/**
 * Rupee text for the pages that show or edit exact amounts (prices per million tokens can be
 * finer than a paisa), from µ₹ decimal strings with bigint arithmetic.
 */

/** The number of decimals µ₹ needs to be shown exactly in rupees: 2 (paise) at least, 6 at most. */
function exactDigits(micros: bigint): number {
  const fraction = (micros < 0n ? -micros : micros) % 1_000_000n;
  const significant = fraction.toString().padStart(6, '0').replace(/0+$/, '').length;
  return Math.max(2, significant);
}

/** µ₹ shown exactly in rupees with Indian grouping: "₹1,00,000.00", "₹0.000125" (no rounding). */
export function exactRupees(micros: string): string {
  return formatRupees(micros, exactDigits(BigInt(micros)));
}

/** µ₹ as an editable rupee amount, exact and without grouping or ₹: "1500.5", "0.000125", "20". */
export function rupeeInput(micros: string): string {
  const value = BigInt(micros);
  const sign = value < 0n ? '-' : '';
  const magnitude = value < 0n ? -value : value;
  const fraction = (magnitude % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return `${sign}${(magnitude / 1_000_000n).toString()}${fraction === '' ? '' : `.${fraction}`}`;
}
