import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import { describe, expect, it } from 'vitest';
import { countTextTokens } from './token-estimate.ts';

const plain = { disallowedSpecial: new Set<string>() };

describe('countTextTokens', () => {
  it('counts ordinary text longer than one counted piece exactly as a whole count does (pieces are cut before a space)', () => {
    const prose = Array.from({ length: 3000 }, (_, i) => `word${i % 97} and, then: ${i}.`).join(' ');
    expect(prose.length).toBeGreaterThan(20 * 2048);
    expect(countTextTokens(prose, 'cl100k_base')).toBe(encode(prose, plain).length);
    const lines = Array.from({ length: 2000 }, (_, i) => `line ${i}\n  indented text here`).join('\n');
    expect(countTextTokens(lines, 'cl100k_base')).toBe(encode(lines, plain).length);
  });

  it('counts a long run without spaces in pieces, never cutting a surrogate pair, instead of one call whose cost grows with its square', () => {
    // 524,288 letters in one call took 90 s (BPE is quadratic in one pre-token); 256 pieces of 2,048 take milliseconds.
    // Every 8 letters "aaaaaaaa" are one cl100k token, so the pieces add up to the whole count.
    expect(countTextTokens('a'.repeat(524_288), 'cl100k_base')).toBe(65_536);
    // A run of emoji (surrogate pairs) cut at an odd boundary would make a lone surrogate, counted as a replacement character.
    const emoji = '😀'.repeat(3000);
    const counted = countTextTokens(`x${emoji}`, 'cl100k_base');
    expect(counted).toBe(encode(`x${emoji.slice(0, 2046)}`, plain).length + encode(emoji.slice(2046), plain).length);
  });
});
