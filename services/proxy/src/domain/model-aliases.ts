// Model aliases: the names a client may send as `model` besides a gateway model's slug (an
// agent's built-in model name, say), mapped to a slug by the platform admin for everyone and by
// an organisation's owners for themselves (docs/model-aliases.md).
import type { ConfigSnapshot, GatewayModelEntry, OrganisationEntry } from './config-snapshot.ts';

/**
 * The gateway model a requested name reaches for an organisation, or undefined when the name is
 * neither a slug nor an alias (the caller answers the same 404 as for any unknown model). The
 * order is slug, then the organisation's alias, then the platform's alias:
 * - A slug first: the name `/v1/models` lists means the same model for everyone, whatever
 *   aliases exist, and the common request (a slug) costs one Map lookup, as before aliases.
 * - The organisation's alias before the platform's: that is what overriding means.
 * Whether the organisation may use the model is the caller's check, on the resolved slug.
 */
export function resolveModelName(snapshot: ConfigSnapshot, organisation: OrganisationEntry, name: string): GatewayModelEntry | undefined {
  const bySlug = snapshot.modelsBySlug.get(name);
  if (bySlug !== undefined) return bySlug;
  const slug = organisation.modelAliases.get(name) ?? snapshot.platformModelAliases.get(name);
  return slug === undefined ? undefined : snapshot.modelsBySlug.get(slug);
}
