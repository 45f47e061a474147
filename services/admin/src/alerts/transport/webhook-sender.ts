import { assertOutsideTransaction } from '@gateway/db';
import { isIP } from 'node:net';
import { Agent, buildConnector, request } from 'undici';
import {
  AddressRefusedError, addressRefusedCode, checkedLookup, disallowedAddressReason, systemResolver, type HostResolver,
} from '@gateway/address-policy';
import type { WebhookSender } from '../domain/alert-delivery.ts';

/** How webhook receivers are reached. */
export interface WebhookSenderOptions {
  /** Deadline of one attempt, connecting included, ms (ALERT_WEBHOOK_TIMEOUT_MS). */
  timeoutMs: number;
  /** ADMIN_ALLOW_PRIVATE_UPSTREAMS: private and loopback receivers allowed (development, tests). */
  allowPrivate: boolean;
  /** How host names are resolved; default the system resolver. */
  resolve?: HostResolver | undefined;
}

// The largest answer body read from a receiver; the rest is dropped (it is never stored).
const maxAnswerBytes = 64 * 1024;

/**
 * The webhook sender: undici with the SSRF policy at connect time (the check the proxy makes for
 * upstreams: every resolved address, after DNS, so rebinding is caught; literal addresses are
 * judged before any socket), no redirects followed (a 3xx is not delivered), and a deadline.
 */
export function createWebhookSender(options: WebhookSenderOptions): WebhookSender {
  const resolve = options.resolve ?? systemResolver;
  const connect = buildConnector({ timeout: options.timeoutMs, lookup: checkedLookup(resolve, options.allowPrivate) });
  const guarded: buildConnector.connector = options.allowPrivate ? connect : (connectOptions, callback) => {
    const host = connectOptions.hostname.replace(/^\[|\]$/g, '');
    const reason = isIP(host) === 0 ? undefined : disallowedAddressReason(host);
    if (reason !== undefined) {
      callback(new AddressRefusedError(`${host} is ${reason}: refused before connecting (SSRF guard)`), null);
      return;
    }
    connect(connectOptions, callback);
  };
  const agent = new Agent({ connect: guarded, headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs });

  return {
    async send(url, body, headers) {
      assertOutsideTransaction('webhook delivery');
      const started = performance.now();
      const elapsed = () => Math.max(0, Math.round(performance.now() - started));
      try {
        const answer = await request(url, {
          method: 'POST', body, headers, dispatcher: agent, signal: AbortSignal.timeout(options.timeoutMs),
        });
        let read = 0;
        // The answer's body is read only to free the connection; its content is not kept.
        for await (const chunk of answer.body) {
          read += (chunk as Buffer).length;
          if (read > maxAnswerBytes) {
            answer.body.destroy();
            break;
          }
        }
        const delivered = answer.statusCode >= 200 && answer.statusCode < 300;
        return { delivered, statusCode: answer.statusCode, errorClass: delivered ? null : 'http_status', durationMs: elapsed() };
      } catch (error) {
        return { delivered: false, statusCode: null, errorClass: errorClassOf(error), durationMs: elapsed() };
      }
    },
    close: () => agent.close(),
  };
}

/** The first `code` in an error's cause chain. */
function errorCodeOf(error: unknown): string | undefined {
  for (let current: unknown = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** A failure's class for the delivery log: a fixed word, never the message (which may hold the URL). */
function errorClassOf(error: unknown): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return 'timeout';
  const code = errorCodeOf(error);
  if (code === undefined) return 'connection_error';
  if (code === addressRefusedCode) return 'address_refused';
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'ETIMEDOUT') return 'timeout';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns_error';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || code.includes('CERT')) return 'tls_error';
  return 'connection_error';
}
