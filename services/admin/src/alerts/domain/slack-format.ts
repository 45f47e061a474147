import type { Alert, AlertKind } from './alert-store.ts';

/** The heading of an alert of each kind, in Slack messages and email subjects. */
export const alertTitles: Record<AlertKind, string> = {
  budget_soft: 'Project budget alert',
  low_balance: 'Low balance',
  test: 'Test alert',
  refund_failed: 'Refund failed',
  payment_shortfall: 'Payment reversal not covered by the balance',
};

/** Text made safe for Slack mrkdwn: &, < and > are control characters there. */
function slackEscaped(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/**
 * An alert in Slack's incoming-webhook shape: `text` (the notification and fallback line) and
 * `blocks` (a header, the message, and the ids a reader needs to find it on the dashboard).
 */
export function slackMessage(alert: Alert): { text: string; blocks: object[] } {
  const title = alertTitles[alert.kind];
  const ids = [`organisation \`${alert.organisationId}\``];
  if (alert.projectId !== null) ids.push(`project \`${alert.projectId}\``);
  ids.push(`alert \`${alert.id}\``);
  return {
    text: slackEscaped(`${title}: ${alert.message}`),
    blocks: [
      { type: 'header', text: { type: 'plain_text', text: title } },
      { type: 'section', text: { type: 'mrkdwn', text: slackEscaped(alert.message) } },
      { type: 'context', elements: [{ type: 'mrkdwn', text: `${ids.join(' · ')} · ${alert.occurredAt.toISOString()}` }] },
    ],
  };
}
