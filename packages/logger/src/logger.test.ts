import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, requestIdFrom } from './index.ts';

function capture() {
  const lines: string[] = [];
  const stream = new Writable({ write(chunk, _enc, done) { lines.push(String(chunk)); done(); } });
  return { lines, stream };
}

describe('createLogger', () => {
  it('redacts authorization headers, keys and credentials', () => {
    const { lines, stream } = capture();
    const logger = createLogger('proxy', 'info', stream);
    logger.info({ req: { headers: { authorization: 'Bearer gwsk_secret' } }, upstream: { apiKey: 'sk-vendor' }, token: 'adm_x' }, 'hello');
    const line = lines.join('');
    expect(line).not.toContain('gwsk_secret');
    expect(line).not.toContain('sk-vendor');
    expect(line).not.toContain('adm_x');
    expect(JSON.parse(line)).toMatchObject({ service: 'proxy', msg: 'hello' });
  });
});

describe('requestIdFrom', () => {
  it('keeps a sane caller id and replaces anything else', () => {
    expect(requestIdFrom('req-123')).toBe('req-123');
    expect(requestIdFrom('bad id\nwith newline')).toMatch(/^[0-9a-f-]{36}$/);
    expect(requestIdFrom(undefined)).toMatch(/^[0-9a-f-]{36}$/);
  });
});
