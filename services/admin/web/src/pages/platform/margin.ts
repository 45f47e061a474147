/**
 * The platform's margin as a share of what customers paid, computed from µ₹ decimal strings with
 * bigint arithmetic (no float near money).
 */

/**
 * The margin as a percentage of the customer price, two decimals, rounded half away from zero
 * (e.g. "23.45%", "-3.10%"); "—" when the customer price is zero (nothing to compare with).
 */
export function marginPercent(marginMicros: string, customerPriceMicros: string): string {
  const price = BigInt(customerPriceMicros);
  if (price === 0n) return '—';
  const margin = BigInt(marginMicros);
  const negative = (margin < 0n) !== (price < 0n);
  const absMargin = margin < 0n ? -margin : margin;
  const absPrice = price < 0n ? -price : price;
  // Hundredths of a percent = margin × 10 000 / price, rounded half up on the magnitude.
  const hundredths = (absMargin * 10_000n * 2n + absPrice) / (absPrice * 2n);
  const whole = hundredths / 100n;
  const fraction = (hundredths % 100n).toString().padStart(2, '0');
  return `${negative && hundredths !== 0n ? '-' : ''}${whole.toString()}.${fraction}%`;
}
