/**
 * Embeddings through the whole gateway: ledger, admin and proxy as processes over real
 * PostgreSQL; an embedding model is created through the admin API (kind "embedding", no output
 * price) on the fake upstream; the official `openai` client's `embeddings.create` gets floats,
 * base64 (its default, decoded by it) and `dimensions`, for a text and a batch; the balance drops
 * by exactly the priced usage the fake reported, and the usage records say so; a batch whose
 * answer cannot fit the read limit is refused before any money moves.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countWords, leakMarkers } from '@gateway/fake-upstream';
import { testPostgresUrl } from '@gateway/testkit';
import { e2ePrices, startE2eGateway, type E2eGateway } from '../support/e2e-gateway.ts';

const serverUrl = testPostgresUrl();
const slug = 'e2e-embed';
const upstreamModel = 'embed-upstream-secret-model';

/** ceil(tokens × input price / 1e6): an embedding model's cost, written out independently of the code under test. */
function inputCostMicros(tokens: number): bigint {
  return (BigInt(tokens) * e2ePrices.inputPriceMicrosPerMtok + 999_999n) / 1_000_000n;
}

/** The fake upstream's count of some texts: their words. */
function fakeTokens(texts: readonly string[]): number {
  return texts.reduce((sum, text) => sum + countWords(text), 0);
}

describe.skipIf(!serverUrl)('embeddings end to end', () => {
  let gateway: E2eGateway;

  beforeAll(async () => {
    gateway = await startE2eGateway({ serverUrl: serverUrl! });
    const created = await gateway.admin('POST', '/gateway-models', {
      slug, kind: 'embedding', max_context_tokens: 8191, input_price_micros_per_mtok: e2ePrices.inputPriceMicrosPerMtok.toString(),
      upstream: { provider_kind: 'openai_compatible', base_url: gateway.upstream.baseUrl, model: upstreamModel, api_key: gateway.upstreamCredential },
    });
    expect(created).toMatchObject({ kind: 'embedding', input_modalities: ['text'], output_price_micros_per_mtok: '0' });
    // Returns once the proxy acknowledged the version that lets the organisation use the model.
    await gateway.admin('PATCH', `/organisations/${gateway.organisationId}`, { allowed_gateway_models: [gateway.modelSlug, slug] });
  }, 120_000);

  afterAll(async () => {
    await gateway?.close();
  });

  it('answers floats, base64 and shortened vectors to the official client, and bills exactly the priced usage', async () => {
    const before = await gateway.settledBalance();
    const client = gateway.client();

    const one = 'a single text to embed';
    const float = await client.embeddings.create({ model: slug, input: one, encoding_format: 'float' });
    expect(float.model).toBe(slug);
    expect(float.data).toHaveLength(1);
    expect(float.data[0]!.embedding).toHaveLength(8);
    expect(float.usage).toMatchObject({ prompt_tokens: fakeTokens([one]), total_tokens: fakeTokens([one]) });

    // No encoding_format: the client asks for base64 and decodes it; the vector is the float one at float32 precision.
    const byDefault = await client.embeddings.create({ model: slug, input: one });
    expect(byDefault.data[0]!.embedding).toEqual(float.data[0]!.embedding.map((value) => Math.fround(value)));

    const batch = ['first of a batch', 'second, a little longer, of the batch', 'third'];
    const shortened = await client.embeddings.create({ model: slug, input: batch, dimensions: 4 });
    expect(shortened.data.map((item) => [item.index, item.embedding.length])).toEqual([[0, 4], [1, 4], [2, 4]]);
    expect(shortened.usage.prompt_tokens).toBe(fakeTokens(batch));
    expect(gateway.upstream.requests.at(-1)!.body).toEqual({ model: upstreamModel, input: batch, dimensions: 4 });
    expect(leakMarkers.all.filter((marker) => JSON.stringify([float, byDefault, shortened]).includes(marker))).toEqual([]);

    const usages = [fakeTokens([one]), fakeTokens([one]), fakeTokens(batch)];
    const expectedMicros = usages.reduce((sum, tokens) => sum + inputCostMicros(tokens), 0n);
    for (const [answer, tokens] of [[float, usages[0]!], [byDefault, usages[1]!], [shortened, usages[2]!]] as const) {
      expect((answer.usage as unknown as { cost_micros: string }).cost_micros).toBe(String(inputCostMicros(tokens)));
    }
    const after = await gateway.settledBalance();
    expect(after.held_micros).toBe('0');
    expect(BigInt(before.available_micros) - BigInt(after.available_micros)).toBe(expectedMicros);
    expect(BigInt(after.debited_micros) - BigInt(before.debited_micros)).toBe(expectedMicros);
    const records = (await gateway.admin('GET', `/organisations/${gateway.organisationId}/usage?model=${slug}`)).data as Array<Record<string, unknown>>;
    expect(records.map((record) => [record.input_tokens, record.output_tokens, record.usage_source]).sort()).toEqual(
      usages.map((tokens) => [tokens, 0, 'upstream']).sort(),
    );
  }, 60_000);

  it('refuses a batch whose answer cannot fit the read limit with a 400 naming input, and no money moves', async () => {
    const before = await gateway.settledBalance();
    const upstreamCalls = gateway.upstream.requests.length;
    // A float upstream at 3072 dimensions: (16 MiB − 16 KiB) / (3072 × 25 B + 256 B) = 217 inputs at most.
    const error = await gateway.client().embeddings.create({ model: slug, input: Array.from({ length: 218 }, () => 'x'), dimensions: 3072 })
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ status: 400, param: 'input' });
    expect((error as Error).message).toContain('at most 217 inputs');
    expect(gateway.upstream.requests.length).toBe(upstreamCalls);
    const after = await gateway.settledBalance();
    expect([after.available_micros, after.held_micros, after.debited_micros]).toEqual([before.available_micros, before.held_micros, before.debited_micros]);
  }, 60_000);
});
