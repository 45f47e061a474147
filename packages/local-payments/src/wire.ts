import { createHmac, randomInt } from 'node:crypto';

// Razorpay's amount fields: integers of paise on the wire, bigint here.
const amountFields = new Set(['amount', 'amount_paid', 'amount_due', 'amount_refunded', 'fee', 'tax']);

/** JSON.rawJSON (Node ≥ 21), which the es2024 lib does not declare: writes a bigint as an exact JSON integer. */
const rawJson = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;

/** A JSON text with every bigint written as an integer (the wire's paise), exactly. */
export function toWireJson(value: unknown): string {
  return JSON.stringify(value, (_key, field: unknown) => typeof field === 'bigint' ? rawJson(field.toString()) : field);
}

/** Parses a request body with its integer amount fields as bigint, read from the number's source text (never a rounded double). */
export function parseWireJson(text: string): unknown {
  return JSON.parse(text, (key: string, value: unknown, context?: { source?: string }) => {
    if (amountFields.has(key) && typeof value === 'number' && context?.source !== undefined && /^-?\d+$/.test(context.source)) {
      return BigInt(context.source);
    }
    return value;
  });
}

const idAlphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A Razorpay-style id: the prefix and 14 random letters and digits (`order_…`, `pay_…`, `rfnd_…`). */
export function newId(prefix: string): string {
  let id = prefix;
  for (let index = 0; index < 14; index += 1) id += idAlphabet[randomInt(idAlphabet.length)];
  return id;
}

/** Hex HMAC-SHA256 of a message, as Razorpay signs Checkout callbacks and webhooks. */
export function hexHmac(key: string, message: string | Buffer): string {
  return createHmac('sha256', key).update(message).digest('hex');
}

/** Paise as rupees with Indian digit grouping, from the bigint (e.g. 10000000n → "₹1,00,000.00"). */
export function formatRupees(paise: bigint): string {
  const negative = paise < 0n;
  const absolute = negative ? -paise : paise;
  const rupees = (absolute / 100n).toString();
  const fraction = (absolute % 100n).toString().padStart(2, '0');
  const lastThree = rupees.slice(-3);
  const rest = rupees.slice(0, -3);
  const grouped = rest === '' ? lastThree : `${rest.replace(/\B(?=(\d{2})+$)/g, ',')},${lastThree}`;
  return `${negative ? '-' : ''}₹${grouped}.${fraction}`;
}

/** Unix time in seconds, as Razorpay's `created_at`. */
export function unixSeconds(): number {
  return Math.floor(Date.now() / 1000);
}
