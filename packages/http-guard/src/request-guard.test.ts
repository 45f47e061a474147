import { describe, expect, it } from 'vitest';
import { GatewayError } from '@gateway/errors';
import type { IncomingMessage } from 'node:http';
import { frameworkRequestError, pathProblem, requestProblem } from './request-guard.ts';

describe('pathProblem', () => {
  it('refuses broken percent-escapes and NUL, accepts encoded UTF-8', () => {
    expect(pathProblem('/v1/models/%E0%A4%A')).toMatch(/percent-encoded/);
    expect(pathProblem('/v1/models/%ZZ')).toMatch(/percent-encoded/);
    expect(pathProblem('/v1/models/%ED%A0%80')).toMatch(/percent-encoded/); // an encoded surrogate
    expect(pathProblem('/admin/v1/organisations/a%00b')).toMatch(/NUL/);
    expect(pathProblem('/v1/models/%E0%A4%85')).toBeUndefined();
    expect(pathProblem('/v1/models/org%2Fmodel')).toBeUndefined();
  });
});

describe('frameworkRequestError', () => {
  it('turns a framework 4xx into invalid_request and leaves anything else alone', () => {
    const decoded = frameworkRequestError(Object.assign(new URIError("Failed to decode param '%E0'"), { status: 400 }));
    expect(decoded).toBeInstanceOf(GatewayError);
    expect((decoded as GatewayError).code).toBe('invalid_request');
    expect((decoded as GatewayError).publicMessage).not.toContain('%E0');
    const bug = new Error('boom');
    expect(frameworkRequestError(bug)).toBe(bug);
  });
});

describe('requestProblem', () => {
  const message = (major: number, minor: number, headers: Record<string, string>) => ({ httpVersionMajor: major, httpVersionMinor: minor, headers }) as unknown as IncomingMessage;

  it('refuses a malformed path, then an HTTP/1.1 request without Host, as 400 invalid_request', () => {
    expect(requestProblem(message(1, 1, { host: 'proxy' }), '/v1/models/%ZZ')?.publicMessage).toMatch(/percent-encoded/);
    expect(requestProblem(message(1, 1, {}), '/v1/models')).toMatchObject({ code: 'invalid_request', publicMessage: 'An HTTP/1.1 request needs a Host header.' });
    expect(requestProblem(message(1, 0, {}), '/v1/models')).toBeUndefined();
    expect(requestProblem(message(1, 1, { host: 'proxy' }), '/v1/models')).toBeUndefined();
  });
});
