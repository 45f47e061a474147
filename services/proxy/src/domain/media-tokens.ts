import { imageDataUrlOf, type ChatContentPart } from './chat-request.ts';
import { audioSecondsOf, imageDimensionsOf, type Bounds, type ImageDimensions } from './media-decoding.ts';

// The prompt tokens an upstream bills for an image or an audio clip, from the providers'
// documented formulas. The Reserve holds the most a part can bill (NO_OVERSPEND relies on it:
// BOUNDED_OVERRUN cuts the output, never the prompt); the context check counts the least, so a
// prompt that fits is never refused for a bound. An upstream model whose family is not known
// gets the largest bound of every formula here.

/** An image's `detail` as the request gives it (absent means auto). */
type ImageDetail = 'auto' | 'low' | 'high';


/**
 * OpenAI's tile formula (platform.openai.com/docs/guides/images-vision, "Calculating costs"):
 * `low` detail costs the base tokens; `high` fits the image within 2048×2048, then scales its
 * shortest side down to 768 px, and costs the base plus a price per 512-px tile. OpenAI's
 * examples: 1024×1024 high = 765 tokens, 2048×4096 high = 1105, any size low = 85 (GPT-4o's
 * 85 + 170 per tile). Images are only scaled down, never up.
 */
export function openAiTileTokens(image: ImageDimensions, detail: 'low' | 'high', baseTokens: number, tileTokens: number): number {
  if (detail === 'low') return baseTokens;
  let { width, height } = image;
  const fit = Math.min(1, 2048 / Math.max(width, height));
  width *= fit;
  height *= fit;
  const shortest = Math.min(1, 768 / Math.min(width, height));
  width *= shortest;
  height *= shortest;
  return baseTokens + tileTokens * Math.ceil(width / 512) * Math.ceil(height / 512);
}

/** The most 512-px tiles a high-detail image can take: 768×2048 after the two resizes (2 × 4). */
const mostTiles = 8;

/**
 * OpenAI's patch formula (the same guide) for GPT-4.1-mini/nano, GPT-5-mini/nano and o4-mini:
 * the 32×32-px patches that cover the image, at most 1536 (a larger image is scaled down, as the
 * guide's steps say, until its patches fit), times the model's multiplier, whatever the detail.
 * OpenAI's examples: 1024×1024 = 1024 patches; 1800×2400 = 1452 patches.
 */
export function openAiPatchTokens(image: ImageDimensions, multiplier: number): number {
  const { width, height } = image;
  let patches = Math.ceil(width / 32) * Math.ceil(height / 32);
  if (patches > maxPatches) {
    let scale = Math.sqrt((32 * 32 * maxPatches) / (width * height));
    scale *= Math.min(Math.floor((width * scale) / 32) / ((width * scale) / 32), Math.floor((height * scale) / 32) / ((height * scale) / 32));
    patches = Math.min(maxPatches, Math.ceil((width * scale) / 32) * Math.ceil((height * scale) / 32));
  }
  return Math.ceil(patches * multiplier);
}

const maxPatches = 1536;

/** How large an image a Claude model looks at: larger ones are scaled down to fit before they are counted. */
interface ClaudeResolution {
  maxLongEdgePx: number;
  maxPixels: number;
}

/**
 * Claude up to 4.6: the long edge at most 1568 px and "about 1,600 tokens" (1,600 × 750 px);
 * Claude Opus 4.7 and later read up to 2576 px on the long edge and about 3.75 megapixels
 * (platform.claude.com/docs/en/build-with-claude/vision, "Evaluate image size").
 */
const claudeStandardResolution: ClaudeResolution = { maxLongEdgePx: 1568, maxPixels: 1600 * 750 };
const claudeHighResolution: ClaudeResolution = { maxLongEdgePx: 2576, maxPixels: 3_750_000 };

/**
 * Anthropic's image tokens (the vision guide): an image larger than the model's resolution is
 * scaled down to fit, preserving its aspect ratio, and then costs about width × height / 750
 * tokens; the guide's newer statement counts 28×28-px patches (⌈w/28⌉ × ⌈h/28⌉). The larger of
 * the two, rounded up, bounds both (Anthropic's example: 1000×1000 ≈ 1334; 200×200 ≈ 54).
 */
export function anthropicImageTokens(image: ImageDimensions, resolution: ClaudeResolution = claudeStandardResolution): number {
  const { width, height } = image;
  const scale = Math.min(1, resolution.maxLongEdgePx / Math.max(width, height), Math.sqrt(resolution.maxPixels / (width * height)));
  const scaledWidth = width * scale;
  const scaledHeight = height * scale;
  return Math.max(Math.ceil((scaledWidth * scaledHeight) / 750), Math.ceil(scaledWidth / 28) * Math.ceil(scaledHeight / 28));
}

/** The most a Claude image of unknown size costs: the pixel budget / 750, plus what the patches' rounding can add along both edges. */
function anthropicMostTokens(resolution: ClaudeResolution): number {
  return Math.ceil(resolution.maxPixels / 750) + Math.ceil((2 * resolution.maxLongEdgePx) / 28) + 1;
}

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
