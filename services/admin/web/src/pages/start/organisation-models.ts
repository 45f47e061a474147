// GET /admin/v1/organisations/{id}/models as the Quickstart and Models pages read it.
import { api } from '../../api.ts';

/** A token class a model charges, as the API names it. */
export type TokenClass = 'input' | 'cached_input' | 'cache_write_5m' | 'cache_write_1h' | 'audio_input' | 'image_input' | 'output' | 'reasoning';

/** A model the organisation may call: slug, aliases, kind and customer prices (µ₹ per million tokens, decimal strings). */
interface OrganisationModel {
  slug: string;
  display_name: string;
  kind: 'chat' | 'embedding';
  aliases: string[];
  prices: Array<{ token_class: TokenClass; price_micros_per_mtok: string }>;
}

/** The answer: the proxy's /v1 base URL (null when the operator has not set it) and the models. */
export interface OrganisationModels {
  api_base_url: string | null;
  data: OrganisationModel[];
}

/** Each token class's name on the pages. */
export const tokenClassNames: Record<TokenClass, string> = {
  input: 'Input',
  cached_input: 'Cached input',
  cache_write_5m: 'Cache write (5 min)',
  cache_write_1h: 'Cache write (1 h)',
  audio_input: 'Audio input',
  image_input: 'Image input',
  output: 'Output',
  reasoning: 'Reasoning',
};

/** Reads the organisation's models. */
export function loadOrganisationModels(organisationId: string): Promise<OrganisationModels> {
  return api.get<OrganisationModels>(`/admin/v1/organisations/${organisationId}/models`);
}
