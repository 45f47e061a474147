import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { X509Certificate } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createCertificateAuthority, ensureLocalPki, issueCertificate } from './local-pki.ts';
import { identityUri } from './service-identity.ts';

describe('ensureLocalPki', () => {
  it('creates a CA and one certificate per service once, keys 0600, and reuses them on the next start', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pki-'));
    const first = await ensureLocalPki(dir);
    const ca = new X509Certificate(await readFile(first.files.proxy.caFile));
    for (const role of ['proxy', 'admin', 'ledger'] as const) {
      const cert = new X509Certificate(await readFile(first.files[role].certFile));
      expect(cert.verify(ca.publicKey)).toBe(true);
      expect(cert.subjectAltName).toContain(`URI:${identityUri(role)}`);
      expect(cert.subjectAltName).toContain('IP Address:127.0.0.1');
      expect(cert.checkHost('localhost')).toBe('localhost');
      expect(cert.keyUsage).toEqual(expect.arrayContaining(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']));
      expect((await stat(first.files[role].keyFile)).mode & 0o777).toBe(0o600);
    }
    expect((await stat(join(dir, 'ca.key'))).mode & 0o777).toBe(0o600);
    const before = await readFile(first.files.admin.certFile, 'utf8');
    await ensureLocalPki(dir);
    expect(await readFile(first.files.admin.certFile, 'utf8')).toBe(before);
  });

  it('renews a certificate that expires within 30 days, keeping the CA', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pki-'));
    const first = await ensureLocalPki(dir);
    const caPem = await readFile(join(dir, 'ca.crt'), 'utf8');
    const caKeyPem = await readFile(join(dir, 'ca.key'), 'utf8');
    const expiring = await issueCertificate({ certPem: caPem, keyPem: caKeyPem }, { commonName: 'ledger', uri: identityUri('ledger'), validityDays: 10 });
    await writeFile(first.files.ledger.certFile, expiring.certPem);
    await writeFile(first.files.ledger.keyFile, expiring.keyPem);
    await ensureLocalPki(dir);
    const renewed = new X509Certificate(await readFile(first.files.ledger.certFile));
    expect(new Date(renewed.validTo).getTime()).toBeGreaterThan(Date.now() + 300 * 86_400_000);
    expect(await readFile(join(dir, 'ca.crt'), 'utf8')).toBe(caPem);
  });

  it('issues certificates that another CA does not verify', async () => {
    const ours = await createCertificateAuthority('ours');
    const theirs = await createCertificateAuthority('theirs');
    const leaf = await issueCertificate(theirs, { commonName: 'proxy', uri: identityUri('proxy') });
    expect(new X509Certificate(leaf.certPem).verify(new X509Certificate(ours.certPem).publicKey)).toBe(false);
  });
});
