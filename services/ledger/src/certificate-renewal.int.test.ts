/**
 * A running ledger takes up a renewed certificate from its GRPC_TLS_* files: no restart, the
 * client connected before the renewal carries on, a new client connects, and the expiry gauge
 * moves to the renewed certificate's.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ledgerV1 } from '@gateway/contracts';
import { openDatabase } from '@gateway/db';
import {
  callUnary, channelCredentials, createCertificateAuthority, fixedCertificates, identityUri, issueCertificate, type PemKeyPair, type ServiceRole,
} from '@gateway/grpc';
import { createLogger } from '@gateway/logger';
import { tracingOff } from '@gateway/telemetry';
import { scrapeMetrics } from '@gateway/testkit';
import { describe, expect, it } from 'vitest';
import { createLedgerApp } from './app.ts';
import { loadLedgerConfig } from './config.ts';
import { uniqueId } from './testing/start-test-ledger.ts';

const leaf = (role: ServiceRole, validityDays: number) => ({
  commonName: role, uri: identityUri(role), dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], validityDays,
});

/** The ledger's certificate expiry series, as [use, seconds since the epoch]. */
async function expirySeries(metricsPort: number): Promise<Array<[string | undefined, number]>> {
  const samples = await scrapeMetrics(`http://127.0.0.1:${metricsPort}/metrics`);
  return samples.filter((sample) => sample.name === 'gateway_tls_certificate_expiry_timestamp_seconds').map((sample) => [sample.labels.certificate, sample.value]);
}

describe('ledger certificate renewal', () => {
  it('serves a renewed certificate without a restart; the gauge follows it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ledger-tls-'));
    const ca = await createCertificateAuthority('renewal test CA');
    const first = await issueCertificate(ca, leaf('ledger', 90));
    const files = { ca: join(dir, 'ca.crt'), cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key') };
    await writeFile(files.ca, ca.certPem);
    await writeFile(files.cert, first.certPem);
    await writeFile(files.key, first.keyPem);
    const notAfterSeconds = (pair: PemKeyPair) => new X509Certificate(pair.certPem).validToDate.getTime() / 1000;

    const database = await openDatabase({ schema: 'ledger' });
    const app = await createLedgerApp(loadLedgerConfig({
      GRPC_TLS_CA_FILE: files.ca, GRPC_TLS_CERT_FILE: files.cert, GRPC_TLS_KEY_FILE: files.key,
      LEDGER_GRPC_PORT: '0', LEDGER_HTTP_PORT: '0', LEDGER_METRICS_PORT: '0', LOG_LEVEL: 'silent', SHUTDOWN_GRACE_MS: '2000',
    }), { logger: createLogger('ledger', 'silent'), database, tracing: tracingOff });
    const adminClient = async () => new ledgerV1.LedgerServiceClient(`localhost:${app.ports.grpc}`, channelCredentials({
      mode: 'mtls',
      certificates: fixedCertificates({ caPem: Buffer.from(ca.certPem), ...buffers(await issueCertificate(ca, leaf('admin', 30))) }),
    }), { 'grpc.use_local_subchannel_pool': 1 });
    const openAccount = (client: ledgerV1.LedgerServiceClient) =>
      callUnary(client.openAccount, client, ledgerV1.OpenAccountRequest.fromPartial({ organisationId: uniqueId('org') }), 10_000);
    const before = await adminClient();
    try {
      expect((await openAccount(before)).result).toBe(ledgerV1.OpenAccountResult.OPEN_ACCOUNT_RESULT_OK);
      expect(await expirySeries(app.ports.metrics)).toEqual([['serving', notAfterSeconds(first)], ['ca', notAfterSeconds(ca)]]);

      // Renewed in place: the new files are written beside and renamed over the old ones.
      const renewed = await issueCertificate(ca, leaf('ledger', 120));
      await writeFile(`${files.key}.new`, renewed.keyPem);
      await writeFile(`${files.cert}.new`, renewed.certPem);
      await rename(`${files.key}.new`, files.key);
      await rename(`${files.cert}.new`, files.cert);
      let series = await expirySeries(app.ports.metrics);
      for (const deadline = Date.now() + 20_000; series[0]?.[1] !== notAfterSeconds(renewed) && Date.now() < deadline;) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        series = await expirySeries(app.ports.metrics);
      }
      expect(series).toEqual([['serving', notAfterSeconds(renewed)], ['ca', notAfterSeconds(ca)]]);

      // The same process and ports throughout: the client from before still answers, and a new one connects.
      expect(app.isReady()).toBe(true);
      expect((await openAccount(before)).result).toBe(ledgerV1.OpenAccountResult.OPEN_ACCOUNT_RESULT_OK);
      const after = await adminClient();
      expect((await openAccount(after)).result).toBe(ledgerV1.OpenAccountResult.OPEN_ACCOUNT_RESULT_OK);
      after.close();
    } finally {
      before.close();
      await app.close();
      await database.close();
    }
  });
});

/** A PEM pair as Buffers. */
function buffers(pair: PemKeyPair) {
  return { certPem: Buffer.from(pair.certPem), keyPem: Buffer.from(pair.keyPem) };
}
