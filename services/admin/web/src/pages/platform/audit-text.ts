/** One audit event as GET /admin/v1/audit-events lists it. */
export interface AuditEvent {
  id: string;
  occurred_at: string;
  actor: {
    kind: 'platform_admin' | 'organisation_token' | 'person' | 'cli' | 'system';
    token_id: string | null;
    person_id: string | null;
  };
  organisation_id: string | null;
  action: string;
  resource_type: string;
  resource_id: string;
  changes: Record<string, { before: unknown; after: unknown }>;
}

/** The longest value text a change line shows before it is cut short with "…". */
const maxValueLength = 80;

/**
 * Who made an audit event, for people: a signed-in person's email (from `emails`, by person id;
 * the id when the person is unknown), a token's kind and id, the command line or the admin itself.
 */
export function auditActorText(actor: AuditEvent['actor'], emails: ReadonlyMap<string, string>): string {
  switch (actor.kind) {
    case 'person':
      return actor.person_id === null ? 'a person' : emails.get(actor.person_id) ?? actor.person_id;
    case 'platform_admin':
      return `platform token ${actor.token_id ?? '(unknown)'}`;
    case 'organisation_token':
      return `organisation token ${actor.token_id ?? '(unknown)'}`;
    case 'cli':
      return 'command line';
    case 'system':
      return 'the admin itself';
  }
}

/** A changed value as a change line shows it: strings as they are, nothing as "none", anything else as JSON, cut to 80 characters. */
function valueText(value: unknown): string {
  const text = value === null || value === undefined ? 'none' : typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > maxValueLength ? `${text.slice(0, maxValueLength - 1)}…` : text;
}

/** An event's changes as lines "field: before → after", in the order the event lists them. */
export function auditChangeLines(changes: AuditEvent['changes']): string[] {
  return Object.entries(changes).map(([field, change]) => `${field}: ${valueText(change.before)} → ${valueText(change.after)}`);
}
