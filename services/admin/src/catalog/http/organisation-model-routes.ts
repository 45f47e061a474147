import { z } from 'zod';
import { moneyShown } from '../../common/http/wire-fields.ts';
import { defineRoute, type AdminRoute } from '../../common/http/route-definition.ts';
import type { OrganisationModel } from '../domain/organisation-models.ts';

/**
 * GET /admin/v1/organisations/{id}/models: what the organisation's members may call and what it
 * costs them, for the dashboard's Quickstart and Models pages (any member, viewers too). Only
 * customer prices: provider costs and upstream targets stay the platform's.
 */

const tokenClassShown = z.enum(['input', 'cached_input', 'cache_write_5m', 'cache_write_1h', 'audio_input', 'image_input', 'output', 'reasoning'])
  .meta({ description: 'The token class: input, cached_input (prompt-cache reads), cache_write_5m / cache_write_1h (prompt-cache writes), audio_input, image_input, output, reasoning (part of the output).' });

const organisationModelResponse = z.strictObject({
  object: z.literal('organisation_model'),
  slug: z.string().meta({ description: 'The gateway model\'s slug: what a request sends as `model`.', examples: ['demo'] }),
  display_name: z.string().meta({ description: 'Its display name (the slug when none was given).' }),
  kind: z.enum(['chat', 'embedding']).meta({ description: 'chat: /v1/chat/completions, /v1/responses and /v1/messages; embedding: /v1/embeddings.' }),
  aliases: z.array(z.string()).meta({ description: 'Other names that reach it for this organisation (its own aliases and the platform\'s it has not overridden), sorted.' }),
  prices: z.array(z.strictObject({
    token_class: tokenClassShown,
    price_micros_per_mtok: moneyShown('Price per million tokens of this class.'),
  })).meta({ description: 'The price of each token class the model charges (embedding models: input only; chat models: audio_input / image_input only when they accept that input; reasoning is the output price unless set apart).' }),
});

const organisationModelsResponse = z.strictObject({
  object: z.literal('list'),
  api_base_url: z.string().nullable().meta({
    description: 'The proxy\'s public /v1 base URL (ADMIN_PROXY_PUBLIC_URL), where API keys are used; null when the operator has not set it.',
    examples: ['https://gateway.example.com/v1'],
  }),
  data: z.array(organisationModelResponse),
});

function organisationModelJson(model: OrganisationModel) {
  return {
    object: 'organisation_model' as const, slug: model.slug, display_name: model.displayName, kind: model.kind, aliases: model.aliases,
    prices: model.prices.map((price) => ({ token_class: price.tokenClass, price_micros_per_mtok: price.microsPerMtok.toString() })),
  };
}

/** The organisation models route. */
export function organisationModelRoutes(): AdminRoute[] {
  return [
    defineRoute({
      method: 'get', path: '/admin/v1/organisations/{id}/models', operationId: 'listOrganisationModels', tag: 'model aliases',
      authenticated: true, access: 'organisation', role: 'viewer', scope: 'organisation',
      summary: 'The gateway models the organisation may use (what its /v1/models lists), with their aliases and customer prices per token class, and the proxy\'s base URL.',
      success: { status: 200, description: 'The organisation\'s models, by slug.', schema: organisationModelsResponse },
      errors: ['unauthenticated', 'not_found'],
      async handle({ service }, { actor, params }) {
        const { apiBaseUrl, models } = await service.catalog.listOrganisationModels(actor, params.id!);
        return { status: 200, body: { object: 'list', api_base_url: apiBaseUrl ?? null, data: models.map(organisationModelJson) } };
      },
    }),
  ];
}
