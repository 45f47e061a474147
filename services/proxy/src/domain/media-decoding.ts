import { imageSize } from 'image-size';
import { base64DecodedBytes } from './chat-request.ts';

// What the media token formulas (media-tokens.ts) are applied to, read from a part's base64
// without trusting the client: an image's width and height from its header, an audio clip's
// length from its WAV header or, failing that, bounded by its size.

/** Width and height of an image, pixels. */
export interface ImageDimensions {
  width: number;
  height: number;
}

/** The least and the most of a quantity (tokens, seconds) that is not known exactly. */
export interface Bounds {
  least: number;
  most: number;
}

/**
 * Bytes per second of compressed audio whose bitrate is not read: the lowest and the highest
 * MP3 bitrates (MPEG-2.5 Layer III at 8 kbit/s; MPEG-1 Layer III at 320 kbit/s), so a clip of n
 * bytes lasts at most n / 1000 s and at least n / 40,000 s.
 */
const lowestCompressedBytesPerSecond = 1000;
const highestCompressedBytesPerSecond = 40_000;

/** Bytes of base64 payload decoded to read an image's or a WAV's header: enough for any PNG, GIF or WebP, and a JPEG's size marker after its usual metadata. */
const headerBytes = 64 * 1024;

function decodeBase64(text: string, start: number, maxBytes: number): Buffer {
  const end = maxBytes === Infinity ? text.length : Math.min(text.length, start + Math.ceil(maxBytes / 3) * 4);
  return Buffer.from(text.slice(start, end), 'base64');
}

/**
 * The width and height of an image in base64 (the `image-size` library: PNG, JPEG, GIF, WebP
 * and more, from the header alone), or undefined when they cannot be read. Only a prefix is
 * decoded; the whole image only when a JPEG's size marker lies past it.
 */
export function imageDimensionsOf(base64: string, start = 0): ImageDimensions | undefined {
  const readable = (bytes: Buffer): ImageDimensions | undefined => {
    try {
      const { width, height } = imageSize(bytes);
      return width > 0 && height > 0 && Number.isFinite(width) && Number.isFinite(height) ? { width, height } : undefined;
    } catch {
      return undefined;
    }
  };
  const prefix = decodeBase64(base64, start, headerBytes);
  return readable(prefix) ?? (prefix.length < base64DecodedBytes(base64, start) ? readable(decodeBase64(base64, start, Infinity)) : undefined);
}

/** The highest byte rate a WAV header may claim to be believed: 192 kHz, 8 channels, 32-bit samples. */
const highestWavBytesPerSecond = 192_000 * 8 * 4;

/** WAV format codes whose byte rate follows from the samples: PCM and IEEE float. */
const uncompressedWavFormats: ReadonlySet<number> = new Set([1, 3]);

/** WAVE_FORMAT_EXTENSIBLE: the real format code is the first two bytes of its SubFormat GUID, 24 bytes into the chunk. */
const extensibleWavFormat = 0xfffe;

/**
 * Bytes per second of a WAV's audio from its `fmt ` chunk, or undefined when there is none to
 * believe. Only PCM and IEEE float (also inside WAVE_FORMAT_EXTENSIBLE) are believed, and then
 * the smaller of the header's byte rate and sample rate × block align: for any other format
 * (MPEG, ADPCM, …) the byte rate is the encoder's claim, which a client may set as high as it
 * likes to shorten the clip and the Reserve (NO_OVERSPEND), so such a WAV is bounded like an MP3.
 */
function wavBytesPerSecond(header: Buffer): number | undefined {
  if (header.length < 12 || header.toString('latin1', 0, 4) !== 'RIFF' || header.toString('latin1', 8, 12) !== 'WAVE') return undefined;
  let offset = 12;
  while (offset + 8 <= header.length) {
    const chunkBytes = header.readUInt32LE(offset + 4);
    if (header.toString('latin1', offset, offset + 4) === 'fmt ') {
      if (offset + 24 > header.length) return undefined;
      let format = header.readUInt16LE(offset + 8);
      if (format === extensibleWavFormat) {
        if (chunkBytes < 40 || offset + 34 > header.length) return undefined;
        format = header.readUInt16LE(offset + 32);
      }
      if (!uncompressedWavFormats.has(format)) return undefined;
      const sampleRate = header.readUInt32LE(offset + 12);
      const byteRate = header.readUInt32LE(offset + 16);
      const blockAlign = header.readUInt16LE(offset + 20);
      const rate = Math.min(byteRate, sampleRate * blockAlign);
      return rate > 0 && rate <= highestWavBytesPerSecond ? rate : undefined;
    }
    offset += 8 + chunkBytes + (chunkBytes % 2);
  }
  return undefined;
}

/**
 * How long an audio clip in base64 lasts, seconds, as a range: a PCM or float WAV from its header
 * (its whole length at the header's byte rate: exact to the header's few bytes); an MP3, a WAV of
 * any other format, or an unreadable WAV from its length between the lowest and highest MP3 bitrates.
 */
export function audioSecondsOf(base64: string, format: 'wav' | 'mp3'): Bounds {
  const bytes = base64DecodedBytes(base64);
  const rate = format === 'wav' ? wavBytesPerSecond(decodeBase64(base64, 0, headerBytes)) : undefined;
  if (rate !== undefined) return { least: bytes / rate, most: bytes / rate };
  return { least: bytes / highestCompressedBytesPerSecond, most: bytes / lowestCompressedBytesPerSecond };
}
