import type { Database } from '@gateway/db';
import type { Actor } from '../../common/domain/actor.ts';
import type { ResourceAccess } from '../../common/domain/resource-access.ts';
import type { CatalogSettings } from './catalog-settings.ts';
import { gatewayModelsBySlug, type StoredGatewayModel } from './gateway-model-store.ts';
import { listOrganisationModelAliases, listPlatformModelAliases } from './model-alias-store.ts';

/** A token class a member is charged for, in the order the Models page lists them. */
type PricedTokenClass = 'input' | 'cached_input' | 'cache_write_5m' | 'cache_write_1h' | 'audio_input' | 'image_input' | 'output' | 'reasoning';

/** A gateway model an organisation may call, as its members see it: names, kind and customer prices only (never provider cost nor upstream). */
export interface OrganisationModel {
  slug: string;
  displayName: string;
  kind: 'chat' | 'embedding';
  /** Other names that reach it for this organisation (its own aliases, then the platform's it has not overridden), sorted. */
  aliases: string[];
  /** The customer price of each token class the model charges, µ₹ per million tokens (reasoning: the output price when it has none of its own). */
  prices: Array<{ tokenClass: PricedTokenClass; microsPerMtok: bigint }>;
}

/** The organisation's models with where customers call them. */
export interface OrganisationModels {
  /** The proxy's public `/v1` base URL (ADMIN_PROXY_PUBLIC_URL), or undefined when the operator has not set it. */
  apiBaseUrl: string | undefined;
  models: OrganisationModel[];
}

/**
 * The token classes a model charges: an embedding model only input; a chat model input, cached
 * input, both cache writes, output and reasoning, plus audio and image input when it accepts them.
 */
function pricesOf(model: StoredGatewayModel): OrganisationModel['prices'] {
  if (model.kind === 'embedding') return [{ tokenClass: 'input', microsPerMtok: model.inputPriceMicrosPerMtok }];
  const prices: OrganisationModel['prices'] = [
    { tokenClass: 'input', microsPerMtok: model.inputPriceMicrosPerMtok },
    { tokenClass: 'cached_input', microsPerMtok: model.cachedInputPriceMicrosPerMtok },
    { tokenClass: 'cache_write_5m', microsPerMtok: model.cacheWrite5mPriceMicrosPerMtok },
    { tokenClass: 'cache_write_1h', microsPerMtok: model.cacheWrite1hPriceMicrosPerMtok },
  ];
  if (model.inputModalities.includes('audio')) prices.push({ tokenClass: 'audio_input', microsPerMtok: model.audioInputPriceMicrosPerMtok });
  if (model.inputModalities.includes('image')) prices.push({ tokenClass: 'image_input', microsPerMtok: model.imageInputPriceMicrosPerMtok });
  prices.push(
    { tokenClass: 'output', microsPerMtok: model.outputPriceMicrosPerMtok },
    { tokenClass: 'reasoning', microsPerMtok: model.reasoningPriceMicrosPerMtok ?? model.outputPriceMicrosPerMtok },
  );
  return prices;
}

/** What the organisation models read is built from. */
export interface OrganisationModelsServiceDeps {
  db: Database;
  access: ResourceAccess;
  settings: CatalogSettings;
}

/** The models an organisation's members may call (route tag "model aliases"): what its /v1/models lists, with aliases and prices. */
export function createOrganisationModelsService({ db, access, settings }: OrganisationModelsServiceDeps) {
  return {
    /**
     * The organisation's allowed gateway models that exist, by slug, each with the aliases that
     * reach it for this organisation (an organisation alias overrides a platform alias of the same
     * name, as the proxy resolves them) and its customer prices; and the proxy's public base URL.
     */
    async listOrganisationModels(actor: Actor, organisationId: string): Promise<OrganisationModels> {
      const organisation = await access.requireOrganisation(actor, organisationId);
      const [models, own, platform] = await Promise.all([
        gatewayModelsBySlug(db, organisation.allowedGatewayModels),
        listOrganisationModelAliases(db, organisationId),
        listPlatformModelAliases(db),
      ]);
      const reaching = new Map<string, string>();
      for (const alias of platform) reaching.set(alias.alias, alias.gatewayModelSlug);
      for (const alias of own) reaching.set(alias.alias, alias.gatewayModelSlug);
      const aliasesOf = new Map<string, string[]>();
      for (const [alias, slug] of [...reaching].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
        aliasesOf.set(slug, [...aliasesOf.get(slug) ?? [], alias]);
      }
      return {
        apiBaseUrl: settings.proxyPublicUrl,
        models: models.map((model) => ({
          slug: model.slug, displayName: model.displayName, kind: model.kind, aliases: aliasesOf.get(model.slug) ?? [], prices: pricesOf(model),
        })),
      };
    },
  };
}
