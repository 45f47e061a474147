/** How a snake_case wire name becomes the domain's camelCase key, for names and whole parsed bodies. */

/** `input_price_micros_per_mtok` → `inputPriceMicrosPerMtok`: a field name as the domain record spells it. */
export type CamelCase<Name extends string> = Name extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<CamelCase<Tail>>}` : Name;
/** A JSON-shaped value with its keys in camelCase, at every depth (values other than plain objects kept). */
export type CamelKeys<T> = T extends Date | bigint | string | number | boolean | null | undefined | readonly unknown[] ? T
  : { [K in keyof T as K extends string ? CamelCase<K> : K]: CamelKeys<T[K]> };

/** `input_price_micros_per_mtok` → `inputPriceMicrosPerMtok`: a wire name as the domain spells it. */
export function camelCase(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_match, letter: string) => letter.toUpperCase());
}

/** A parsed request body with its keys in camelCase at every depth, the values kept (bigint money stays bigint). */
export function camelKeys<T>(value: T): CamelKeys<T> {
  if (value === null || typeof value !== 'object' || Array.isArray(value) || value instanceof Date) return value as CamelKeys<T>;
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [camelCase(key), camelKeys(inner)])) as CamelKeys<T>;
}
