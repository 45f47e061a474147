import { describe, expect, it } from 'vitest';
import { toCsv } from './csv.ts';

describe('toCsv', () => {
  it('writes RFC 4180: CRLF line ends, a header line, plain fields unquoted', () => {
    expect(toCsv(['a', 'b'], [['x', 1], ['y', 2n]])).toBe('a,b\r\nx,1\r\ny,2\r\n');
    expect(toCsv(['only'], [])).toBe('only\r\n');
  });

  it('quotes fields holding a comma, a quote or a line break, doubling quotes', () => {
    expect(toCsv(['v'], [['a,b'], ['say "hi"'], ['two\nlines'], ['cr\rhere']]))
      .toBe('v\r\n"a,b"\r\n"say ""hi"""\r\n"two\nlines"\r\n"cr\rhere"\r\n');
  });

  it('neutralises text that a spreadsheet would run as a formula, but leaves computed numbers alone', () => {
    const csv = toCsv(['v'], [['=HYPERLINK("http://evil")'], ['+1'], ['-2+3'], ['@SUM(A1)'], ['\tx'], ['plain=ok'], [-1200n], [-5], [null]]);
    expect(csv.split('\r\n')).toEqual([
      'v', '"\'=HYPERLINK(""http://evil"")"', "'+1", "'-2+3", "'@SUM(A1)", "'\tx", 'plain=ok', '-1200', '-5', '', '',
    ]);
  });

  it('keeps bigints exact beyond 2^53', () => {
    expect(toCsv(['m'], [[12_345_678_901_234_567_890n]])).toBe('m\r\n12345678901234567890\r\n');
  });
});
