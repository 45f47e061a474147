import { Metadata, status as GrpcStatus } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { errorCatalogue, fromGrpcError, GatewayError, toGrpcError, toHttpError } from './index.ts';

describe('toHttpError', () => {
  it('maps a catalogue error to an OpenAI-shaped body', () => {
    const response = toHttpError(new GatewayError('rate_limit_exceeded', { headers: { 'retry-after': '3' } }));
    expect(response).toEqual({
      status: 429,
      headers: { 'retry-after': '3' },
      body: { error: { message: 'Rate limit exceeded', type: 'rate_limit_error', param: null, code: 'rate_limit_exceeded' } },
    });
  });

  it('keeps the param and a message we wrote', () => {
    const response = toHttpError(new GatewayError('invalid_request', { publicMessage: 'messages must not be empty', param: 'messages' }));
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ message: 'messages must not be empty', param: 'messages' });
  });

  it('never leaks the text of an unknown error', () => {
    const response = toHttpError(new Error('connect ECONNREFUSED 10.0.0.7:5432 password=hunter2'));
    expect(response.status).toBe(500);
    expect(JSON.stringify(response)).not.toContain('hunter2');
    expect(JSON.stringify(response)).not.toContain('ECONNREFUSED');
    expect(response.body.error.code).toBe('internal_error');
  });

  it('uses the internal message for logs only', () => {
    const error = new GatewayError('upstream_error', { internalMessage: 'vendor said: quota for org-123' });
    expect(error.message).toContain('vendor said');
    expect(JSON.stringify(toHttpError(error))).not.toContain('vendor');
  });

  it('gives every catalogue entry a 4xx or 5xx status and a message', () => {
    for (const [code, definition] of Object.entries(errorCatalogue)) {
      expect(definition.httpStatus, code).toBeGreaterThanOrEqual(400);
      expect(definition.publicMessage.length, code).toBeGreaterThan(0);
    }
  });
});

describe('gRPC mapping', () => {
  it('round-trips a catalogue code through status and metadata', () => {
    const payload = toGrpcError(new GatewayError('insufficient_balance'));
    expect(payload.code).toBe(GrpcStatus.FAILED_PRECONDITION);
    const rebuilt = fromGrpcError(Object.assign(new Error('x'), payload));
    expect(rebuilt.code).toBe('insufficient_balance');
  });

  it('hides internal detail of unknown errors', () => {
    const payload = toGrpcError(new Error('relation "accounts" does not exist'));
    expect(payload.code).toBe(GrpcStatus.INTERNAL);
    expect(payload.details).not.toContain('relation');
  });

  it('treats a peer failure without our code as unavailable', () => {
    const peerDown = Object.assign(new Error('14 UNAVAILABLE: No connection established'), {
      code: GrpcStatus.UNAVAILABLE, details: 'No connection established', metadata: new Metadata(),
    });
    expect(fromGrpcError(peerDown).code).toBe('service_unavailable');
  });
});
