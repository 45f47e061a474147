import { imageDataUrlOf, type ChatContentPart } from './chat-request.ts';
import {
  anthropicImageTokens, anthropicMostTokens, claudeHighResolution, claudeStandardResolution, maxPatches, mostTiles, openAiPatchTokens, openAiTileTokens,
  type ClaudeResolution,
} from './image-token-formulas.ts';
import { audioSecondsOf, imageDimensionsOf, type Bounds, type ImageDimensions } from './media-decoding.ts';

// The prompt tokens an upstream bills for an image or an audio clip, from the providers'
// documented formulas. The Reserve holds the most a part can bill (NO_OVERSPEND relies on it:
// BOUNDED_OVERRUN cuts the output, never the prompt); the context check counts the least, so a
// prompt that fits is never refused for a bound. An upstream model whose family is not known
// gets the largest bound of every formula here.

/** An image's `detail` as the request gives it (absent means auto). */
type ImageDetail = 'auto' | 'low' | 'high';

/** One family's image formula. */
type ImageFormula =
  | { kind: 'tile'; baseTokens: number; tileTokens: number }
  | { kind: 'patch'; multiplier: number }
  | { kind: 'claude'; resolution: ClaudeResolution };

/** An image's tokens under one formula, as a range: exact when the size is known and the detail decided. */
function imageBounds(formula: ImageFormula, image: ImageDimensions | undefined, detail: ImageDetail): Bounds {
  switch (formula.kind) {
    case 'tile': {
      const { baseTokens, tileTokens } = formula;
      if (detail === 'low') return { least: baseTokens, most: baseTokens };
      const most = image === undefined ? baseTokens + tileTokens * mostTiles : openAiTileTokens(image, 'high', baseTokens, tileTokens);
      // auto: the upstream picks low or high itself.
      const least = detail === 'auto' ? baseTokens : image === undefined ? baseTokens + tileTokens : most;
      return { least, most };
    }
    case 'patch': {
      if (image !== undefined) {
        const tokens = openAiPatchTokens(image, formula.multiplier);
        return { least: tokens, most: tokens };
      }
      return { least: Math.ceil(formula.multiplier), most: Math.ceil(maxPatches * formula.multiplier) };
    }
    case 'claude': {
      if (image !== undefined) {
        const tokens = anthropicImageTokens(image, formula.resolution);
        return { least: tokens, most: tokens };
      }
      return { least: 1, most: anthropicMostTokens(formula.resolution) };
    }
  }
}

// OpenAI's per-model figures (the images-vision guide's tables). The GPT-5 family is reserved at
// GPT-4o's 85/170, above its documented 70/140: later gpt-5.x snapshots have billed above the
// documented figures, and a Reserve must never be under the bill.
const gpt4oClass: ImageFormula = { kind: 'tile', baseTokens: 85, tileTokens: 170 };
const gpt4oMini: ImageFormula = { kind: 'tile', baseTokens: 2833, tileTokens: 5667 };
const oSeries: ImageFormula = { kind: 'tile', baseTokens: 75, tileTokens: 150 };
const patchesAt162: ImageFormula = { kind: 'patch', multiplier: 1.62 };
const patchesAt246: ImageFormula = { kind: 'patch', multiplier: 2.46 };
const patchesAt172: ImageFormula = { kind: 'patch', multiplier: 1.72 };
const claudeStandard: ImageFormula = { kind: 'claude', resolution: claudeStandardResolution };
const claudeHigh: ImageFormula = { kind: 'claude', resolution: claudeHighResolution };

/** Every formula: an unknown family is counted at the largest of them. */
const everyImageFormula: readonly ImageFormula[] = [gpt4oClass, gpt4oMini, oSeries, patchesAt162, patchesAt246, patchesAt172, claudeStandard, claudeHigh];

/** OpenAI model names (after any `vendor/` prefix) and their formula, the more specific first. */
const openAiImageFamilies: ReadonlyArray<readonly [RegExp, ImageFormula]> = [
  [/^(?:gpt-4\.1-mini|gpt-5(?:\.\d+)?-mini)(?:\b|[-_.:])/, patchesAt162],
  [/^(?:gpt-4\.1-nano|gpt-5(?:\.\d+)?-nano)(?:\b|[-_.:])/, patchesAt246],
  [/^o4-mini(?:\b|[-_.:])/, patchesAt172],
  [/^gpt-4o-mini(?:\b|[-_.:])/, gpt4oMini],
  [/^(?:o1|o3)(?:\b|[-_.:])/, oSeries],
  [/^(?:gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4\.5|gpt-4-turbo|gpt-4-vision|gpt-5)(?:\b|[-_.:])/, gpt4oClass],
];

// Claude's names: claude-3-5-sonnet-…, claude-3-opus-… (version first) or claude-sonnet-4-5,
// claude-opus-4-20250514 (version last; an 8-digit date is not a minor version), also after a
// cloud prefix (anthropic.claude-…, us.anthropic.claude-…, …@20241022).
const claudeVersionFirst = /claude-(\d+)(?:[-.](\d))?-(?:opus|sonnet|haiku)/;
const claudeVersionLast = /claude-(?:opus|sonnet|haiku)-(\d+)(?:[-.](\d{1,2})(?!\d))?/;

/** The image formula of a Claude model: standard resolution up to 4.6, high after; a Claude name it cannot read gets the high one. */
function claudeFormula(name: string): ImageFormula {
  const version = claudeVersionFirst.exec(name) ?? claudeVersionLast.exec(name);
  if (version === null) return claudeHigh;
  const major = Number(version[1]);
  const minor = Number(version[2] ?? 0);
  return major < 4 || (major === 4 && minor <= 6) ? claudeStandard : claudeHigh;
}

/** The image formula for an upstream model name; undefined for a family this file does not know. */
function imageFormulaOf(upstreamModel: string): ImageFormula | undefined {
  const name = upstreamModel.toLowerCase();
  if (name.includes('claude')) return claudeFormula(name);
  const bare = name.includes('/') ? name.slice(name.lastIndexOf('/') + 1) : name;
  for (const [pattern, formula] of openAiImageFamilies) if (pattern.test(bare)) return formula;
  return undefined;
}

/**
 * Audio tokens per second. OpenAI's audio models: user audio is "1 token per 100 ms"
 * (platform.openai.com/docs/guides/realtime-conversations, "Audio input"), 10 per second.
 * Everything else: 32 per second, Gemini's documented rate ("each second of audio as 32
 * tokens", ai.google.dev/gemini-api/docs/audio), the largest any provider documents.
 */
const openAiAudioTokensPerSecond = 10;
const largestAudioTokensPerSecond = 32;
const openAiAudioModel = /^(?:gpt-4o(?:-mini)?-(?:audio|realtime)|gpt-audio|gpt-realtime)(?:\b|[-_.:])/;

/**
 * Counts the image and audio parts of one request for its upstream model. `tokensOf` gives the
 * most a part can bill (what the estimate adds, so the Reserve covers it); `slackTokens` sums how
 * far those are above the least each can bill, so the context check can leave them out.
 */
export class MediaTokenCounter {
  /** Σ (most − least) tokens over the parts counted so far. */
  slackTokens = 0;
  readonly #imageFormula: ImageFormula | undefined;
  readonly #audioTokensPerSecond: number;

  /** `upstreamModel` is the provider's model name (the family is read from it, as the tokenizer is); '' for an unknown family. */
  constructor(upstreamModel: string) {
    this.#imageFormula = imageFormulaOf(upstreamModel);
    const bare = upstreamModel.toLowerCase().slice(upstreamModel.lastIndexOf('/') + 1);
    this.#audioTokensPerSecond = openAiAudioModel.test(bare) ? openAiAudioTokensPerSecond : largestAudioTokensPerSecond;
  }

  /** The most prompt tokens a media part can bill (0 for a text part, whose tokens the tokenizer counts). */
  tokensOf(part: ChatContentPart): number {
    let range: Bounds;
    if (part.type === 'image_url') range = this.#imageRange(part.image_url.url, part.image_url.detail ?? 'auto');
    else if (part.type === 'input_audio') {
      const seconds = audioSecondsOf(part.input_audio.data, part.input_audio.format);
      range = { least: Math.floor(seconds.least * this.#audioTokensPerSecond), most: Math.ceil(seconds.most * this.#audioTokensPerSecond) };
    } else return 0;
    this.slackTokens += range.most - range.least;
    return range.most;
  }

  #imageRange(url: string, detail: ImageDetail): Bounds {
    const dataUrl = imageDataUrlOf(url);
    // An http(s) URL is fetched by the upstream: its size is unknown here.
    const image = dataUrl === undefined ? undefined : imageDimensionsOf(url, dataUrl.base64Start);
    if (this.#imageFormula !== undefined) return imageBounds(this.#imageFormula, image, detail);
    let most = 0;
    for (const formula of everyImageFormula) most = Math.max(most, imageBounds(formula, image, detail).most);
    return { least: 0, most };
  }
}
