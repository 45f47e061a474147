import { describe, expect, it } from 'vitest';
import { certificateExpiries } from './grpc-tls.ts';
import { createCertificateAuthority, issueCertificate } from './local-pki.ts';
import { fixedCertificates, inspectCertificates } from './service-certificates.ts';

const dayMs = 86_400_000;

describe('inspectCertificates', () => {
  it('refuses a key that is not the certificate\'s, and a file with no certificate, naming no contents', async () => {
    const ca = await createCertificateAuthority('test CA');
    const one = await issueCertificate(ca, { commonName: 'ledger' });
    const two = await issueCertificate(ca, { commonName: 'ledger' });
    const pems = (cert: string, key: string, caPem = ca.certPem) => ({ caPem: Buffer.from(caPem), certPem: Buffer.from(cert), keyPem: Buffer.from(key) });
    expect(() => inspectCertificates(pems(one.certPem, two.keyPem))).toThrow('the private key does not belong to the certificate');
    expect(() => inspectCertificates(pems('not a certificate', one.keyPem))).toThrow('the certificate file holds no PEM certificate');
    expect(() => inspectCertificates(pems(one.certPem, one.keyPem, ''))).toThrow('the CA file holds no PEM certificate');
    expect(inspectCertificates(pems(one.certPem, one.keyPem)).certNotAfter.getTime()).toBeGreaterThan(Date.now());
  });

  it('reports the service certificate\'s expiry per use and the trust bundle\'s first to expire', async () => {
    const longCa = await createCertificateAuthority('long CA', 3650);
    const shortCa = await createCertificateAuthority('short CA', 20);
    const leaf = await issueCertificate(longCa, { commonName: 'admin', validityDays: 90 });
    const certificates = fixedCertificates({
      caPem: Buffer.from(`${longCa.certPem}\n${shortCa.certPem}\n`), certPem: Buffer.from(leaf.certPem), keyPem: Buffer.from(leaf.keyPem),
    });
    const expiries = certificateExpiries({ mode: 'mtls', certificates }, ['serving', 'client']);
    expect(expiries.map((entry) => entry.certificate)).toEqual(['serving', 'client', 'ca']);
    const days = (seconds: number) => Math.round((seconds * 1000 - Date.now()) / dayMs);
    expect(expiries.map((entry) => days(entry.notAfterSeconds))).toEqual([90, 90, 20]);
    expect(certificateExpiries({ mode: 'insecure' }, ['serving'])).toEqual([]);
  });
});
