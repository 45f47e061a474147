import { GatewayError } from '@gateway/errors';
import { describe, expect, it } from 'vitest';
import { surfaceErrorTranslator, type MessageSource, type SurfaceSpelling } from './surface-error-translator.ts';

/** A made-up surface, spelled unlike both real ones, so only the shared walk can produce these paths. */
const spelling: SurfaceSpelling = {
  conversation: 'turns',
  partSuffixOf: (suffix) => (suffix === '.text' ? '/words' : ''),
  callSuffixes: { '.function.arguments': '/args' },
  unrecorded: { toolCallId: (source) => `${source.path}/ref`, call: (source) => `${source.path}/calls` },
  renamedParams: { stop: 'halt' },
  patternedParamOf: (chatParam) => (chatParam.startsWith('tools[') ? `kit${chatParam.slice('tools'.length)}` : undefined),
  paramlessErrors: false,
};

const sources: MessageSource[] = [
  { path: 'preamble', contentPath: 'preamble', partPaths: [], callPaths: [] },
  { path: 'turns/0', contentPath: 'turns/0/body', partPaths: ['turns/0/body/0', 'turns/0/body/1'], callPaths: [] },
  { path: 'turns/1', contentPath: 'turns/1/body', partPaths: [], callPaths: ['turns/1/body/0', 'turns/2'] },
  { path: 'turns/3', contentPath: 'turns/3/out', toolCallIdPath: 'turns/3/ticket', partPaths: [], callPaths: [] },
  { path: 'turns/4', contentPath: 'turns/4/out', partPaths: [], callPaths: [] },
];

/** The param and message a client sees for an error naming `param` in its message. */
function translated(param: string, surface = spelling) {
  const error = surfaceErrorTranslator(surface, sources)(new GatewayError('invalid_request', { param, publicMessage: `Invalid ${param}: no.` })) as GatewayError;
  return { param: error.param, message: error.publicMessage };
}

describe('surfaceErrorTranslator', () => {
  it('walks an internal messages[...] param to the recorded source, with the surface\'s suffixes and fallbacks', () => {
    const cases: Array<[string, string]> = [
      ['messages[0].content', 'preamble'],
      ['messages[1]', 'turns/0'],
      ['messages[1].role', 'turns/0'],
      ['messages[1].content', 'turns/0/body'],
      ['messages[1].content[1].text', 'turns/0/body/1/words'],
      ['messages[1].content[0].image_url.url', 'turns/0/body/0'],
      ['messages[1].content[7]', 'turns/0/body'],
      ['messages[2].tool_calls[1].function.arguments', 'turns/2/args'],
      ['messages[2].tool_calls[0].id', 'turns/1/body/0'],
      ['messages[2].tool_calls[5].id', 'turns/1/calls'],
      ['messages[3].tool_call_id', 'turns/3/ticket'],
      ['messages[4].tool_call_id', 'turns/4/ref'],
      ['messages[9].content', 'turns'],
      ['messages', 'turns'],
      ['stop', 'halt'],
      ['tools[2].function.name', 'kit[2].function.name'],
    ];
    for (const [internal, expected] of cases) expect(translated(internal), internal).toEqual({ param: expected, message: `Invalid ${expected}: no.` });
  });

  it('keeps the code, headers and cause, and prefixes a message that does not name the param only on a paramless surface', () => {
    const tooLarge = new GatewayError('request_too_large', { param: 'messages[1].content[0]', publicMessage: 'Too big.', headers: { 'x-why': 'size' } });
    const named = surfaceErrorTranslator(spelling, sources)(tooLarge) as GatewayError;
    expect({ code: named.code, param: named.param, message: named.publicMessage, headers: named.headers, cause: named.cause }).toEqual({
      code: 'request_too_large', param: 'turns/0/body/0', message: 'Too big.', headers: { 'x-why': 'size' }, cause: tooLarge,
    });
    const prefixed = surfaceErrorTranslator({ ...spelling, paramlessErrors: true }, sources)(tooLarge) as GatewayError;
    expect({ code: prefixed.code, message: prefixed.publicMessage }).toEqual({ code: 'request_too_large', message: 'turns/0/body/0: Too big.' });
    expect(translated('messages[1].content', { ...spelling, paramlessErrors: true }).message).toBe('Invalid turns/0/body: no.');
  });

  it('returns as they are an error whose param the surface spells the same, one without a param, and anything not a GatewayError', () => {
    const translate = surfaceErrorTranslator(spelling, sources);
    for (const error of [
      new GatewayError('invalid_request', { param: 'temperature', publicMessage: 'no' }),
      new GatewayError('invalid_request', { param: 'constructor', publicMessage: 'no' }),
      new GatewayError('insufficient_balance'),
      new Error('boom'),
      'text',
    ]) expect(translate(error)).toBe(error);
  });

  it('reads the sources when an error is translated, so a surface may record them after making its translator', () => {
    const late: MessageSource[] = [];
    const translate = surfaceErrorTranslator(spelling, late);
    late.push({ path: 'later', contentPath: 'later/body', partPaths: [], callPaths: [] });
    expect((translate(new GatewayError('invalid_request', { param: 'messages[0].content', publicMessage: 'x' })) as GatewayError).param).toBe('later/body');
  });
});
