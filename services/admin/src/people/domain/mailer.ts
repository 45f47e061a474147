/** One plain-text email. */
interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

/** Sends email (over the operator's SMTP server: people/transport/smtp-mailer.ts). */
export interface Mailer {
  /** Sends one message; rejects when the server refuses it or cannot be reached in time. */
  send(message: MailMessage): Promise<void>;
}
