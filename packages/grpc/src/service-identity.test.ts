import { describe, expect, it } from 'vitest';
import { authorizationError, identityUri, roleOfCertificate } from './service-identity.ts';

describe('roleOfCertificate', () => {
  it('reads the role from the spiffe URI SAN', () => {
    expect(identityUri('proxy')).toBe('spiffe://inr-gateway/proxy');
    expect(roleOfCertificate({ subjectaltname: 'DNS:localhost, IP Address:127.0.0.1, URI:spiffe://inr-gateway/admin' })).toBe('admin');
    expect(roleOfCertificate({ subjectaltname: 'URI:"spiffe://inr-gateway/ledger"' })).toBe('ledger');
  });

  it('finds no identity in a certificate without one, with another trust domain, or with two roles', () => {
    expect(roleOfCertificate(undefined)).toBeUndefined();
    expect(roleOfCertificate({ subjectaltname: '' })).toBeUndefined();
    expect(roleOfCertificate({ subjectaltname: 'DNS:proxy, URI:spiffe://elsewhere/proxy' })).toBeUndefined();
    expect(roleOfCertificate({ subjectaltname: 'URI:spiffe://inr-gateway/proxyx' })).toBeUndefined();
    expect(roleOfCertificate({ subjectaltname: 'URI:spiffe://inr-gateway/proxy, URI:spiffe://inr-gateway/admin' })).toBeUndefined();
  });
});

describe('authorizationError', () => {
  const table = { credit: ['admin'] as const, reserve: ['proxy'] as const };

  it('denies by default: a method the table does not name, even inherited names, is refused', () => {
    expect(authorizationError(table, 'credit', 'admin')).toBeUndefined();
    expect(authorizationError(table, 'verify', 'admin')?.code).toBe('permission_denied');
    expect(authorizationError(table, 'toString', 'admin')?.code).toBe('permission_denied');
    expect(authorizationError(table, 'reserve', undefined)?.code).toBe('unauthenticated');
  });
});
