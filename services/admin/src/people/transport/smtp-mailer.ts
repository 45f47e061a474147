import { assertOutsideTransaction } from '@gateway/db';
import { createTransport } from 'nodemailer';
import type { Mailer } from '../domain/mailer.ts';

/** Where email goes: the SMTP server's URL and the sender address. */
export interface SmtpSettings {
  /** smtp:// or smtps:// URL, credentials in it if the server needs them. */
  url: string;
  /** The From address of every message. */
  from: string;
}

/** How long connecting to, greeting and talking to the SMTP server may each take, ms. */
const smtpTimeoutMs = 10_000;

/**
 * A mailer over an SMTP server (smtp:// or smtps://) sending from `settings.from`; undefined
 * without settings, and then nothing is emailed.
 */
export function createMailer(settings: SmtpSettings | undefined): Mailer | undefined {
  if (settings === undefined) return undefined;
  const url = new URL(settings.url);
  const transport = createTransport({
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? (url.protocol === 'smtps:' ? 465 : 587) : Number(url.port),
    secure: url.protocol === 'smtps:',
    ...(url.username === '' ? {} : { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } }),
    connectionTimeout: smtpTimeoutMs,
    greetingTimeout: smtpTimeoutMs,
    socketTimeout: smtpTimeoutMs,
  });
  const { from } = settings;
  return {
    async send(message) {
      assertOutsideTransaction('mail delivery');
      await transport.sendMail({ from, to: message.to, subject: message.subject, text: message.text });
    },
  };
}
