import { assertOutsideTransaction } from '@gateway/db';
import { createTransport } from 'nodemailer';
import type { AdminConfig } from '../../config.ts';

/** One plain-text email. */
interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

/** Sends email through the operator's SMTP server (SMTP_URL, SMTP_FROM). */
export interface Mailer {
  /** Sends one message; rejects when the server refuses it or cannot be reached within 10 s. */
  send(message: MailMessage): Promise<void>;
}

/** How long connecting to, greeting and talking to the SMTP server may each take, ms. */
const smtpTimeoutMs = 10_000;

/**
 * A mailer over SMTP_URL (smtp:// or smtps://, credentials in the URL if the server needs them)
 * sending from SMTP_FROM; undefined unless both are set, and then nothing is emailed.
 */
export function createMailer(config: Pick<AdminConfig, 'SMTP_URL' | 'SMTP_FROM'>): Mailer | undefined {
  if (config.SMTP_URL === undefined || config.SMTP_FROM === undefined) return undefined;
  const url = new URL(config.SMTP_URL);
  const transport = createTransport({
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? (url.protocol === 'smtps:' ? 465 : 587) : Number(url.port),
    secure: url.protocol === 'smtps:',
    ...(url.username === '' ? {} : { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } }),
    connectionTimeout: smtpTimeoutMs,
    greetingTimeout: smtpTimeoutMs,
    socketTimeout: smtpTimeoutMs,
  });
  const from = config.SMTP_FROM;
  return {
    async send(message) {
      assertOutsideTransaction('mail delivery');
      await transport.sendMail({ from, to: message.to, subject: message.subject, text: message.text });
    },
  };
}
