import { gatewayModelLeaves, leafValue, type GatewayModel } from '../domain/gateway-model-fields.ts';
import type { GatewayModelJson } from './gateway-model-schema.ts';

/** A domain value as JSON shows it: money (bigint) as a decimal string, an instant as ISO-8601. */
function shownValue(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Date) return value.toISOString();
  return value;
}

/**
 * The JSON of a gateway model: exactly the fields a response shows, in the record's order, money
 * as decimal strings (anything else the object carries, such as a sealed credential, is never copied).
 */
export function gatewayModelJson(model: GatewayModel): GatewayModelJson {
  const json: Record<string, unknown> = {};
  for (const leaf of gatewayModelLeaves) {
    if (!leaf.shown) continue;
    const [group, field] = leaf.wireName.includes('.') ? leaf.wireName.split('.') as [string, string] : [undefined, leaf.wireName];
    if (group === undefined) json[field] = shownValue(leafValue(model, leaf));
    else ((json[group] ??= {}) as Record<string, unknown>)[field] = shownValue(leafValue(model, leaf));
  }
  return json as GatewayModelJson;
}
