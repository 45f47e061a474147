/**
 * GSTIN (GST identification number) checks: the 15-character format and its check character.
 *
 * Layout: 2 digits of state code, the holder's 10-character PAN (5 letters, 4 digits, 1 letter),
 * the entity number within the state (1-9, then A-Z), one more character ('Z' by default), and a
 * check character. The check character is the Luhn mod-36 algorithm over the first 14
 * characters, with the alphabet 0-9 A-Z as values 0..35: from the left, every second value is
 * doubled; each product adds its base-36 digits (quotient + remainder by 36); the check value is
 * (36 − sum mod 36) mod 36.
 */

const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const radix = alphabet.length;

/** The GSTIN layout without its check character's correctness. */
const gstinPattern = /^[0-9]{2}[A-Z]{5}[0-9]{4}[A-Z][1-9A-Z][0-9A-Z][0-9A-Z]$/;

/**
 * The check character of a GSTIN's first 14 characters (0-9, A-Z), by the mod-36 algorithm above.
 * @public The published algorithm, checked on its own against hand-worked values; gstinProblem is its caller here.
 */
export function gstinCheckCharacter(first14: string): string {
  if (!/^[0-9A-Z]{14}$/.test(first14)) throw new RangeError('a GSTIN check character is computed from 14 characters of 0-9 and A-Z');
  let sum = 0;
  for (let index = 0; index < first14.length; index += 1) {
    const value = alphabet.indexOf(first14[index]!);
    const product = value * (index % 2 === 0 ? 1 : 2);
    sum += Math.floor(product / radix) + (product % radix);
  }
  return alphabet[(radix - (sum % radix)) % radix]!;
}

/** The state code (2 digits) of the state a GSTIN is registered in: its first two characters. */
export function gstinStateCode(gstin: string): string {
  return gstin.slice(0, 2);
}

/**
 * Why a value is not a valid GSTIN (a phrase to follow the field's name), or undefined when it is
 * one: the layout first, then the check character. Expects upper case (callers normalise).
 */
export function gstinProblem(gstin: string): string | undefined {
  if (!gstinPattern.test(gstin)) {
    return 'must be a 15-character GSTIN: 2-digit state code, 10-character PAN, entity number, one more character and the check character (e.g. 27AAPFU0939F1ZV)';
  }
  if (gstinCheckCharacter(gstin.slice(0, 14)) !== gstin[14]) return 'has a wrong check character (a typing error?)';
  return undefined;
}
