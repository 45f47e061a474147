import type { ImageDimensions } from './media-decoding.ts';

// The providers' documented image formulas, each a pure function of an image's size; which
// model family uses which (and with what figures) is media-tokens.ts's business.

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
export const mostTiles = 8;

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

/** The most 32-px patches OpenAI's patch formula counts for one image. */
export const maxPatches = 1536;

/** How large an image a Claude model looks at: larger ones are scaled down to fit before they are counted. */
export interface ClaudeResolution {
  maxLongEdgePx: number;
  maxPixels: number;
}

/**
 * Claude up to 4.6: the long edge at most 1568 px and "about 1,600 tokens" (1,600 × 750 px);
 * Claude Opus 4.7 and later read up to 2576 px on the long edge and about 3.75 megapixels
 * (platform.claude.com/docs/en/build-with-claude/vision, "Evaluate image size").
 */
export const claudeStandardResolution: ClaudeResolution = { maxLongEdgePx: 1568, maxPixels: 1600 * 750 };
/** Claude Opus 4.7 and later: 2576 px on the long edge, about 3.75 megapixels. */
export const claudeHighResolution: ClaudeResolution = { maxLongEdgePx: 2576, maxPixels: 3_750_000 };

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
export function anthropicMostTokens(resolution: ClaudeResolution): number {
  return Math.ceil(resolution.maxPixels / 750) + Math.ceil((2 * resolution.maxLongEdgePx) / 28) + 1;
}
