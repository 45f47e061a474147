const units = ['Zero', 'One', 'Two', 'Three', 'Four', 'Five', 'Six', 'Seven', 'Eight', 'Nine', 'Ten', 'Eleven', 'Twelve',
  'Thirteen', 'Fourteen', 'Fifteen', 'Sixteen', 'Seventeen', 'Eighteen', 'Nineteen'];
const tens = ['', '', 'Twenty', 'Thirty', 'Forty', 'Fifty', 'Sixty', 'Seventy', 'Eighty', 'Ninety'];

/** 1..99 in words ("Forty Two"). */
function belowHundred(n: number): string {
  if (n < 20) return units[n]!;
  const rest = n % 10;
  return rest === 0 ? tens[Math.trunc(n / 10)]! : `${tens[Math.trunc(n / 10)]} ${units[rest]}`;
}

/** 1..999 in words ("Nine Hundred Five"). */
function belowThousand(n: number): string {
  const hundreds = Math.trunc(n / 100);
  const rest = n % 100;
  const parts: string[] = [];
  if (hundreds > 0) parts.push(`${units[hundreds]} Hundred`);
  if (rest > 0) parts.push(belowHundred(rest));
  return parts.join(' ');
}

/**
 * A whole number in words on the Indian system (thousand, lakh, crore; crores beyond 99 are
 * themselves counted in words: "One Thousand Crore"), e.g. 118000n → "One Lakh Eighteen Thousand".
 */
function indianNumberInWords(value: bigint): string {
  if (value < 0n) throw new RangeError('a negative amount has no words here');
  if (value === 0n) return 'Zero';
  const parts: string[] = [];
  const crores = value / 10_000_000n;
  const belowCrore = Number(value % 10_000_000n); // < 10^7: exact as a number
  if (crores > 0n) parts.push(`${indianNumberInWords(crores)} Crore`);
  const lakhs = Math.trunc(belowCrore / 100_000);
  const thousands = Math.trunc((belowCrore % 100_000) / 1000);
  const rest = belowCrore % 1000;
  if (lakhs > 0) parts.push(`${belowHundred(lakhs)} Lakh`);
  if (thousands > 0) parts.push(`${belowHundred(thousands)} Thousand`);
  if (rest > 0) parts.push(belowThousand(rest));
  return parts.join(' ');
}

/**
 * An amount of paise in words as Indian invoices write a total, e.g. 11800050n → "Rupees One
 * Lakh Eighteen Thousand and Fifty Paise Only"; 100n → "Rupees One Only"; 50n → "Fifty Paise Only".
 */
export function amountInWords(paise: bigint): string {
  if (paise < 0n) throw new RangeError('a negative amount has no words here');
  const rupees = paise / 100n;
  const remainder = paise % 100n;
  if (remainder === 0n) return `Rupees ${indianNumberInWords(rupees)} Only`;
  const paiseWords = `${belowHundred(Number(remainder))} Paise`;
  return rupees === 0n ? `${paiseWords} Only` : `Rupees ${indianNumberInWords(rupees)} and ${paiseWords} Only`;
}
