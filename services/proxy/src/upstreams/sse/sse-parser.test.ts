import { describe, expect, it } from 'vitest';
import { SseParser } from './sse-parser.ts';

/** One server-sent event as the parser hands it over: its `event:` name (undefined when absent) and its data lines joined by "\n". */
interface SseEvent {
  event: string | undefined;
  data: string;
}

function parse(pieces: readonly string[], end = false): SseEvent[] {
  const events: SseEvent[] = [];
  const parser = new SseParser((event, data) => events.push({ event, data }));
  for (const piece of pieces) parser.push(Buffer.from(piece));
  if (end) parser.end();
  return events;
}

describe('SseParser', () => {
  it('emits each event as soon as its blank line arrives, across arbitrary splits', () => {
    const text = 'data: {"a":1}\n\nevent: message_delta\ndata: {"b":2}\n\n: ping\n\ndata: [DONE]\n\n';
    const expected = [
      { event: undefined, data: '{"a":1}' }, { event: 'message_delta', data: '{"b":2}' }, { event: undefined, data: '[DONE]' },
    ];
    expect(parse([text])).toEqual(expected);
    expect(parse(text.split(''))).toEqual(expected);
    expect(parse([text.slice(0, 9), text.slice(9, 30), text.slice(30)])).toEqual(expected);
  });

  it('handles CRLF, multi-line data, no space after the colon, and multi-byte characters split between chunks', () => {
    const bytes = Buffer.from('data:{"t":"नमस्ते"}\r\ndata: second\r\n\r\n');
    const events: SseEvent[] = [];
    const parser = new SseParser((event, data) => events.push({ event, data }));
    for (let i = 0; i < bytes.length; i += 3) parser.push(bytes.subarray(i, i + 3));
    expect(events).toEqual([{ event: undefined, data: '{"t":"नमस्ते"}\nsecond' }]);
  });

  it('does not emit an event whose blank line never came until the body ends', () => {
    expect(parse(['data: partial'])).toEqual([]);
    expect(parse(['data: partial'], true)).toEqual([{ event: undefined, data: 'partial' }]);
  });
});
