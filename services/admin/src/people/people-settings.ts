import type { AdminConfig } from '../config.ts';
import type { PeopleSettings } from './domain/people-settings.ts';
import type { SmtpSettings } from './transport/smtp-mailer.ts';

/** The people area's settings from the admin's environment (the one place their names are read). */
export function peopleSettingsFrom(config: AdminConfig): PeopleSettings {
  return {
    sessionIdleMs: config.ADMIN_SESSION_IDLE_MS,
    sessionAbsoluteMs: config.ADMIN_SESSION_ABSOLUTE_MS,
    linkTtlMs: config.ADMIN_LINK_TTL_MS,
    publicUrl: config.ADMIN_PUBLIC_URL,
    setupEmail: config.ADMIN_SETUP_EMAIL,
  };
}

/** The SMTP server links and alerts are emailed through (SMTP_URL, SMTP_FROM); undefined unless both are set. */
export function smtpSettingsFrom(config: AdminConfig): SmtpSettings | undefined {
  return config.SMTP_URL === undefined || config.SMTP_FROM === undefined ? undefined : { url: config.SMTP_URL, from: config.SMTP_FROM };
}
