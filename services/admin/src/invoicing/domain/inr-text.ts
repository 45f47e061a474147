/** Groups a run of digits the Indian way: the last three, then pairs (12,34,56,789). */
function groupIndian(digits: string): string {
  if (digits.length <= 3) return digits;
  const head = digits.slice(0, -3);
  const pairs: string[] = [];
  for (let end = head.length; end > 0; end -= 2) pairs.unshift(head.slice(Math.max(0, end - 2), end));
  return `${pairs.join(',')},${digits.slice(-3)}`;
}

/**
 * An amount of µ₹ as text for alert messages, e.g. 100000000000n → "₹1,00,000.00": Indian
 * grouping, paise rounded half up, computed on the bigint (never through a float).
 */
export function formatInr(micros: bigint): string {
  const negative = micros < 0n;
  const paise = ((negative ? -micros : micros) + 5_000n) / 10_000n;
  return `${negative ? '-' : ''}₹${groupIndian((paise / 100n).toString())}.${(paise % 100n).toString().padStart(2, '0')}`;
}

/**
 * An amount of µ₹ exactly, for alert messages: paise as usual ("₹8,000.00"), more decimals only
 * when the amount is not a whole paisa ("₹0.00029", trailing zeros past the paise trimmed), so a
 * small spend never reads as ₹0.00. Bigint arithmetic only.
 */
export function formatInrExact(micros: bigint): string {
  const negative = micros < 0n;
  const magnitude = negative ? -micros : micros;
  const fraction = (magnitude % 1_000_000n).toString().padStart(6, '0').replace(/(?<=\d\d)0+$/, '');
  return `${negative ? '-' : ''}₹${groupIndian((magnitude / 1_000_000n).toString())}.${fraction}`;
}
