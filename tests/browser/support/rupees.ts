/**
 * The test's own rendering of an amount of µ₹ as the dashboard must show it, written
 * independently of the dashboard's format.ts so the browser test can catch a mistake there:
 * Indian grouping, exact to the µ₹ ("₹1,23,45,678.90", "₹0.00029", "₹1,234.567891"), with at
 * least two decimals and no trailing zeros past the paise.
 */

/** A whole number with Indian digit grouping: 1234567 -> "12,34,567". */
export function indianDigits(value: number | bigint | string): string {
  let head = value.toString();
  const groups: string[] = [head.slice(-3)];
  head = head.slice(0, -3);
  while (head.length > 0) {
    groups.unshift(head.slice(-2));
    head = head.slice(0, -2);
  }
  return groups.join(',');
}

/** µ₹ (bigint or decimal string) as exact rupees with Indian digit grouping, at least two decimals. */
export function expectedRupees(micros: bigint | string): string {
  const value = BigInt(micros);
  const negative = value < 0n;
  const magnitude = negative ? -value : value;
  let fraction = (magnitude % 1_000_000n).toString().padStart(6, '0');
  while (fraction.length > 2 && fraction.endsWith('0')) fraction = fraction.slice(0, -1);
  const sign = negative && magnitude !== 0n ? '-' : '';
  return `${sign}₹${indianDigits(magnitude / 1_000_000n)}.${fraction}`;
}
