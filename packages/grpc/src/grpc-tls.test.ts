import { Writable } from 'node:stream';
import { createLogger } from '@gateway/logger';
import { describe, expect, it } from 'vitest';
import { clientChannelOptions, grpcTransportSecurity, serverOptions } from './grpc-tls.ts';

/** A logger whose lines land in an array. */
function capturingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({ write(chunk: Buffer, _encoding, done) { lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>); done(); } });
  return { logger: createLogger('test', 'info', destination), lines };
}

describe('grpcTransportSecurity', () => {
  it('logs at error level, on every start, that GRPC_INSECURE=true leaves internal gRPC open', () => {
    const { logger, lines } = capturingLogger();
    expect(grpcTransportSecurity({ GRPC_INSECURE: true }, logger)).toEqual({ mode: 'insecure' });
    expect(grpcTransportSecurity({ GRPC_INSECURE: true }, logger)).toEqual({ mode: 'insecure' });
    const warnings = lines.filter((line) => String(line.msg).includes('PLAINTEXT AND UNAUTHENTICATED'));
    expect(warnings).toHaveLength(2);
    expect(warnings.every((line) => line.level === 50 || line.level === 'error')).toBe(true);
  });

  it('reads the certificate files at start and names the variable of one it cannot read', () => {
    const { logger } = capturingLogger();
    expect(() => grpcTransportSecurity({
      GRPC_INSECURE: false, GRPC_TLS_CA_FILE: '/nonexistent/ca.crt', GRPC_TLS_CERT_FILE: '/nonexistent/tls.crt', GRPC_TLS_KEY_FILE: '/nonexistent/tls.key',
    }, logger)).toThrow(/GRPC_TLS_CA_FILE: cannot read \/nonexistent\/ca.crt: ENOENT/);
  });
});

describe('channel and server options', () => {
  it('caps reconnect backoff at a few seconds and keeps connections alive, with servers accepting the pings', () => {
    expect(clientChannelOptions['grpc.max_reconnect_backoff_ms']).toBeLessThanOrEqual(2_000);
    expect(clientChannelOptions['grpc.keepalive_time_ms']).toBe(10_000);
    expect(clientChannelOptions['grpc.keepalive_permit_without_calls']).toBe(1);
    expect(serverOptions['grpc.http2.min_ping_interval_without_data_ms']).toBeLessThan(clientChannelOptions['grpc.keepalive_time_ms'] as number);
    expect(serverOptions['grpc.keepalive_permit_without_calls']).toBe(1);
  });
});
