import { describe, expect, it } from 'vitest';
import { png, wav } from '../test-support/media-fixtures.ts';
import type { ChatContentPart } from './chat-request.ts';
import { audioSecondsOf, imageDimensionsOf } from './media-decoding.ts';
import { anthropicImageTokens, openAiPatchTokens, openAiTileTokens } from './image-token-formulas.ts';
import { MediaTokenCounter } from './media-tokens.ts';
import { estimatePromptTokens } from './token-estimate.ts';

// Real, decodable images of a given size, written here byte by byte (PNG and WAV come from
// test-support/media-fixtures.ts): each is the smallest valid file of its format.

function jpegSegment(marker: number, data: number[]): number[] {
  const length = data.length + 2;
  return [0xff, marker, length >> 8, length & 0xff, ...data];
}

/**
 * A grey baseline greyscale JPEG: one Huffman code per table (DC difference 0, AC end of block),
 * so each 8×8 block is two 0 bits.
 */
function jpeg(width: number, height: number, extraMetadataBytes = 0): Buffer {
  const blocks = Math.ceil(width / 8) * Math.ceil(height / 8);
  const scan = Buffer.alloc(Math.ceil((blocks * 2) / 8), 0);
  const usedBits = blocks * 2;
  if (usedBits % 8 !== 0) scan[scan.length - 1] = (1 << (8 - (usedBits % 8))) - 1; // pad the last byte with 1 bits
  const oneCodeTable = [1, ...Array<number>(15).fill(0), 0]; // one code of length 1, for symbol 0
  const metadata: number[] = [];
  for (let left = extraMetadataBytes; left > 0; left -= 60_000) {
    metadata.push(...jpegSegment(0xe1, Array<number>(Math.min(left, 60_000)).fill(0x20))); // APP1, as EXIF would sit
  }
  return Buffer.from([
    0xff, 0xd8,
    ...jpegSegment(0xe0, [0x4a, 0x46, 0x49, 0x46, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0]), // JFIF
    ...metadata,
    ...jpegSegment(0xdb, [0, ...Array<number>(64).fill(1)]), // quantisation table 0
    ...jpegSegment(0xc0, [8, height >> 8, height & 0xff, width >> 8, width & 0xff, 1, 1, 0x11, 0]), // SOF0, one component
    ...jpegSegment(0xc4, [0x00, ...oneCodeTable, 0x10, ...oneCodeTable]), // DC and AC Huffman tables
    ...jpegSegment(0xda, [1, 1, 0x00, 0, 63, 0]), // start of scan
    ...scan,
    0xff, 0xd9,
  ]);
}

/** A GIF whose logical screen is width×height, holding a one-pixel image. */
function gif(width: number, height: number): Buffer {
  return Buffer.from([
    ...Buffer.from('GIF89a', 'latin1'), width & 0xff, width >> 8, height & 0xff, height >> 8, 0x80, 0, 0,
    0, 0, 0, 0xff, 0xff, 0xff, // two-colour global palette
    0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, // image descriptor: 1×1 at the origin
    0x02, 0x02, 0x44, 0x01, 0x00, // LZW: clear, pixel 0, end
    0x3b,
  ]);
}

/** A lossless (VP8L) WebP of one colour: every prefix code has a single symbol, so the pixels take no bits. */
function webp(width: number, height: number): Buffer {
  const bits: number[] = [];
  const write = (value: number, count: number) => { for (let bit = 0; bit < count; bit += 1) bits.push((value >> bit) & 1); };
  write(width - 1, 14);
  write(height - 1, 14);
  write(0, 1); // no alpha
  write(0, 3); // version 0
  write(0, 1); // no transform
  write(0, 1); // no colour cache
  write(0, 1); // no meta prefix codes
  for (let code = 0; code < 5; code += 1) {
    write(1, 1); // simple code
    write(0, 1); // one symbol
    write(1, 1); // of 8 bits
    write(code === 3 ? 0xff : 0x40, 8); // green, red, blue, alpha (opaque), distance
  }
  const stream = Buffer.alloc(1 + Math.ceil(bits.length / 8));
  stream[0] = 0x2f;
  bits.forEach((bit, index) => { stream[1 + (index >> 3)]! |= bit << (index & 7); });
  const padded = stream.length % 2 === 0 ? stream : Buffer.concat([stream, Buffer.alloc(1)]);
  const chunkHeader = Buffer.alloc(8);
  chunkHeader.write('VP8L', 0, 'latin1');
  chunkHeader.writeUInt32LE(stream.length, 4);
  const riff = Buffer.alloc(12);
  riff.write('RIFF', 0, 'latin1');
  riff.writeUInt32LE(4 + 8 + padded.length, 4);
  riff.write('WEBP', 8, 'latin1');
  return Buffer.concat([riff, chunkHeader, padded]);
}

function dataUrl(type: string, bytes: Buffer): string {
  return `data:image/${type};base64,${bytes.toString('base64')}`;
}

function imagePart(url: string, detail?: 'auto' | 'low' | 'high'): ChatContentPart {
  return { type: 'image_url', image_url: { url, ...(detail === undefined ? {} : { detail }) } };
}

describe("OpenAI's tile formula", () => {
  it("gives OpenAI's published examples", () => {
    expect(openAiTileTokens({ width: 1024, height: 1024 }, 'high', 85, 170)).toBe(765);
    expect(openAiTileTokens({ width: 2048, height: 4096 }, 'high', 85, 170)).toBe(1105);
    expect(openAiTileTokens({ width: 4096, height: 8192 }, 'low', 85, 170)).toBe(85);
  });

  it('never scales a small image up, and takes at most 8 tiles', () => {
    expect(openAiTileTokens({ width: 512, height: 512 }, 'high', 85, 170)).toBe(255);
    expect(openAiTileTokens({ width: 100, height: 100 }, 'high', 85, 170)).toBe(255);
    expect(openAiTileTokens({ width: 2048, height: 767 }, 'high', 85, 170)).toBe(85 + 8 * 170);
    expect(openAiTileTokens({ width: 20_000, height: 7_000 }, 'high', 85, 170)).toBe(85 + 8 * 170);
  });

  it("prices gpt-4o-mini's images with its documented multipliers", () => {
    expect(openAiTileTokens({ width: 1024, height: 1024 }, 'high', 2833, 5667)).toBe(2833 + 4 * 5667);
    expect(openAiTileTokens({ width: 1024, height: 1024 }, 'low', 2833, 5667)).toBe(2833);
  });
});

describe("OpenAI's patch formula", () => {
  it("gives OpenAI's published examples, times the model's multiplier", () => {
    expect(openAiPatchTokens({ width: 1024, height: 1024 }, 1)).toBe(1024);
    expect(openAiPatchTokens({ width: 1800, height: 2400 }, 1)).toBe(1452);
    expect(openAiPatchTokens({ width: 1024, height: 1024 }, 1.62)).toBe(1659); // 1658.88 rounded up
    // Scaled down to 39 × 39 = 1521 patches (40 × 40 would pass 1536), × 2.46 = 3741.66.
    expect(openAiPatchTokens({ width: 8000, height: 8000 }, 2.46)).toBe(3742);
  });
});

describe("Anthropic's image formula", () => {
  it("gives Anthropic's published examples", () => {
    expect(anthropicImageTokens({ width: 1000, height: 1000 })).toBe(1334);
    expect(anthropicImageTokens({ width: 1092, height: 1092 })).toBe(1590);
    // 200×200 is about 54 by width × height / 750, but 64 28-px patches: the larger bounds both.
    expect(anthropicImageTokens({ width: 200, height: 200 })).toBe(64);
  });

  it('scales a large image down to the model resolution first', () => {
    expect(anthropicImageTokens({ width: 4000, height: 4000 })).toBeLessThanOrEqual(1600 + 1);
    expect(anthropicImageTokens({ width: 10_000, height: 500 })).toBeLessThanOrEqual(Math.ceil((1568 * 78.4) / 750) + 60);
  });
});

describe('the image size reader', () => {
  it.each([
    ['PNG', png(321, 123)],
    ['JPEG', jpeg(321, 123)],
    ['GIF', gif(321, 123)],
    ['WebP', webp(321, 123)],
  ])('reads the width and height of a real %s', (_format, bytes) => {
    expect(imageDimensionsOf(bytes.toString('base64'))).toEqual({ width: 321, height: 123 });
  });

  it('reads a JPEG whose size marker lies past the decoded prefix, and gives up on bytes that are no image', () => {
    const photo = jpeg(1200, 900, 200_000);
    expect(photo.length).toBeGreaterThan(200_000);
    expect(imageDimensionsOf(photo.toString('base64'))).toEqual({ width: 1200, height: 900 });
    expect(imageDimensionsOf(Buffer.from('not an image at all').toString('base64'))).toBeUndefined();
  });

  it('reads the payload of a data URL in place', () => {
    const url = dataUrl('png', png(40, 30));
    expect(imageDimensionsOf(url, 'data:image/png;base64,'.length)).toEqual({ width: 40, height: 30 });
  });
});

describe('audio duration', () => {
  it('is exact for a WAV, from its header', () => {
    const seconds = audioSecondsOf(wav(3).toString('base64'), 'wav');
    expect(seconds.most).toBeCloseTo(3, 2);
    expect(seconds.least).toBe(seconds.most);
  });

  it('is bounded for an MP3 by its length at the lowest and highest MP3 bitrates', () => {
    const bytes = Buffer.alloc(120_000, 0xff);
    expect(audioSecondsOf(bytes.toString('base64'), 'mp3')).toEqual({ least: 3, most: 120 });
  });

  it('is bounded like an MP3 for a WAV whose header cannot be believed', () => {
    const lying = wav(1);
    lying.writeUInt32LE(4_000_000_000, 24); // a sample rate no recorder has
    lying.writeUInt32LE(4_000_000_000, 28);
    expect(audioSecondsOf(lying.toString('base64'), 'wav').most).toBeCloseTo(lying.length / 1000, 6);
  });

  it('believes the byte rate of PCM and float WAVs only: any other format is bounded like an MP3', () => {
    // A WAV declaring MPEG at 6,000,000 B/s over 1 MB was reserved at 2 tokens.
    const mpeg = wav(32);
    mpeg.writeUInt16LE(0x0050, 20); // WAVE_FORMAT_MPEG
    mpeg.writeUInt32LE(6_000_000, 28);
    const mpegSeconds = audioSecondsOf(mpeg.toString('base64'), 'wav');
    expect(mpegSeconds).toEqual(audioSecondsOf(mpeg.toString('base64'), 'mp3'));
    expect(new MediaTokenCounter('gpt-4o-audio-preview').tokensOf({ type: 'input_audio', input_audio: { data: mpeg.toString('base64'), format: 'wav' } }))
      .toBe(Math.ceil((mpeg.length / 1000) * 10));

    const float = wav(2);
    float.writeUInt16LE(3, 20); // WAVE_FORMAT_IEEE_FLOAT
    expect(audioSecondsOf(float.toString('base64'), 'wav').most).toBeCloseTo(2, 2);
  });

  it('reads the real format of a WAVE_FORMAT_EXTENSIBLE header from its SubFormat', () => {
    const extensible = (subFormat: number, byteRate: number): string => {
      const plain = wav(2);
      const fmt = Buffer.alloc(8 + 40);
      fmt.write('fmt ', 0, 'latin1');
      fmt.writeUInt32LE(40, 4);
      plain.copy(fmt, 8, 20, 36); // format, channels, sample rate, byte rate, block align, bits
      fmt.writeUInt16LE(0xfffe, 8);
      fmt.writeUInt32LE(byteRate, 16);
      fmt.writeUInt16LE(22, 24); // cbSize
      fmt.writeUInt16LE(subFormat, 32); // the SubFormat GUID's first two bytes
      return Buffer.concat([plain.subarray(0, 12), fmt, plain.subarray(36)]).toString('base64');
    };
    expect(audioSecondsOf(extensible(1, 32_000), 'wav').most).toBeCloseTo(2, 2);
    const mpeg = extensible(0x0050, 6_000_000);
    expect(audioSecondsOf(mpeg, 'wav')).toEqual(audioSecondsOf(mpeg, 'mp3'));
  });
});

describe('MediaTokenCounter', () => {
  const square = dataUrl('png', png(1024, 1024));

  it('counts a known image exactly for a known family, with no slack', () => {
    const counter = new MediaTokenCounter('gpt-4o-2024-08-06');
    expect(counter.tokensOf(imagePart(square, 'high'))).toBe(765);
    expect(counter.tokensOf(imagePart(square, 'low'))).toBe(85);
    expect(counter.slackTokens).toBe(0);
    expect(new MediaTokenCounter('openai/gpt-4.1-mini').tokensOf(imagePart(square))).toBe(1659);
    expect(new MediaTokenCounter('claude-sonnet-4-5').tokensOf(imagePart(dataUrl('png', png(1000, 1000))))).toBe(1334);
  });

  it('holds the upper bound for detail auto and for a URL, and records how far that is above the least', () => {
    const counter = new MediaTokenCounter('gpt-4o');
    expect(counter.tokensOf(imagePart(square))).toBe(765); // auto: may be high
    expect(counter.slackTokens).toBe(765 - 85); // or low
    const byUrl = new MediaTokenCounter('gpt-4o');
    expect(byUrl.tokensOf(imagePart('https://images.example/cat.png', 'high'))).toBe(85 + 8 * 170);
    expect(byUrl.slackTokens).toBe(7 * 170);
  });

  it('reads Claude versions: high resolution from Opus 4.7 on and for names it cannot read', () => {
    const large = imagePart('https://images.example/big.jpg');
    expect(new MediaTokenCounter('claude-3-5-sonnet-20241022').tokensOf(large)).toBe(1600 + 112 + 1);
    expect(new MediaTokenCounter('us.anthropic.claude-opus-4-20250514-v1:0').tokensOf(large)).toBe(1713);
    expect(new MediaTokenCounter('claude-opus-4-7').tokensOf(large)).toBe(5000 + 184 + 1);
    expect(new MediaTokenCounter('claude-next').tokensOf(large)).toBe(5185);
  });

  it('counts an unknown family at the largest bound of every formula, none of it in the least', () => {
    const counter = new MediaTokenCounter('llama-3.2-90b-vision');
    expect(counter.tokensOf(imagePart(square))).toBe(2833 + 4 * 5667); // gpt-4o-mini's figure is the largest
    expect(counter.tokensOf(imagePart('http://images.example/a.png'))).toBe(2833 + 8 * 5667);
    expect(counter.tokensOf(imagePart('http://images.example/a.png', 'low'))).toBe(5185); // Claude's high resolution beats 2833
    expect(counter.slackTokens).toBe(2833 + 4 * 5667 + 2833 + 8 * 5667 + 5185);
  });

  it("counts audio at OpenAI's 10 tokens a second for its audio models, 32 for anything else", () => {
    const clip: ChatContentPart = { type: 'input_audio', input_audio: { data: wav(3).toString('base64'), format: 'wav' } };
    expect(new MediaTokenCounter('gpt-4o-audio-preview').tokensOf(clip)).toBe(31); // 3.0014 s: the 44-byte header counts as sound
    expect(new MediaTokenCounter('some-audio-model').tokensOf(clip)).toBe(97);
    const mp3: ChatContentPart = { type: 'input_audio', input_audio: { data: Buffer.alloc(30_000, 0xff).toString('base64'), format: 'mp3' } };
    const counter = new MediaTokenCounter('gpt-4o-mini-audio-preview');
    expect(counter.tokensOf(mp3)).toBe(300); // at most 30 s at 8 kbit/s
    expect(counter.slackTokens).toBe(300 - 7); // at least 0.75 s at 320 kbit/s
  });

  it('is what the prompt estimate adds for media parts, and nothing for a text-only request', () => {
    const text = { messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'hello' }] }], params: {} };
    const withImage = { messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'hello' }, imagePart(square, 'high')] }], params: {} };
    expect(estimatePromptTokens(withImage, 'o200k_base', new MediaTokenCounter('gpt-4o')) - estimatePromptTokens(text, 'o200k_base')).toBe(765);
    // Without a counter, an image is counted at the largest bound.
    expect(estimatePromptTokens(withImage, 'o200k_base') - estimatePromptTokens(text, 'o200k_base')).toBe(2833 + 4 * 5667);
  });
});
