/**
 * The test's own rendering of an amount of µ₹ as the dashboard must show it ("₹1,23,45,678.90":
 * Indian grouping, paise rounded half away from zero), written independently of the dashboard's
 * format.ts so the browser test can catch a mistake there.
 */

/** µ₹ (bigint or decimal string) as rupees with Indian digit grouping and two decimals. */
export function expectedRupees(micros: bigint | string): string {
  const value = BigInt(micros);
  const negative = value < 0n;
  const paise = ((negative ? -value : value) + 5_000n) / 10_000n;
  let whole = (paise / 100n).toString();
  const groups: string[] = [whole.slice(-3)];
  whole = whole.slice(0, -3);
  while (whole.length > 0) {
    groups.unshift(whole.slice(-2));
    whole = whole.slice(0, -2);
  }
  const sign = negative && paise !== 0n ? '-' : '';
  return `${sign}₹${groups.join(',')}.${(paise % 100n).toString().padStart(2, '0')}`;
}
