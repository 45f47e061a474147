import type { Queryable } from '@gateway/db';
import { personIdOf, tokenIdOf, type Actor } from './actor.ts';
import type { Page } from './admin-records.ts';

/** A JSON value as stored in an audit event (money and other bigints become decimal strings). */
type AuditValue = string | number | boolean | null | AuditValue[] | { [key: string]: AuditValue };

/** The before/after of each changed field; a field absent before (creation) has before null. */
export type AuditChanges = Record<string, { before: AuditValue; after: AuditValue }>;

/** One recorded mutation: who, what, when, and what changed. Never holds a secret. */
export interface AuditEvent {
  /** Increasing; the cursor of the audit log. */
  id: bigint;
  occurredAt: Date;
  actorKind: Actor['kind'];
  actorTokenId: string | null;
  /** The person who made the change (signed in to the dashboard); null for tokens, the command line and the system. */
  actorPersonId: string | null;
  organisationId: string | null;
  /** e.g. `organisation.update`, `project.rotate_key`. */
  action: string;
  resourceType: string;
  resourceId: string;
  changes: AuditChanges;
}

/** What a caller records; the id and time are the database's. */
export interface AuditEventInput {
  actor: Actor;
  organisationId: string | null;
  action: string;
  resourceType: string;
  resourceId: string;
  changes: AuditChanges;
}

/** A value as the audit log stores it: bigints as decimal strings, dates as ISO strings. */
function auditValue(value: unknown): AuditValue {
  if (value === undefined || value === null) return null;
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(auditValue);
  if (typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, auditValue(inner)]));
  return value as AuditValue;
}

/**
 * The changed fields between two records, under the given names (`field name in the record` →
 * `name in the log`). Fields whose values are equal are left out. `before` undefined: a creation.
 */
export function changedFields(
  before: object | undefined,
  after: object,
  fields: Record<string, string>,
): AuditChanges {
  const changes: AuditChanges = {};
  for (const [recordField, logName] of Object.entries(fields)) {
    const previous = auditValue((before as Record<string, unknown> | undefined)?.[recordField]);
    const next = auditValue((after as Record<string, unknown>)[recordField]);
    if (JSON.stringify(previous) !== JSON.stringify(next)) changes[logName] = { before: previous, after: next };
  }
  return changes;
}

/** Records a mutation, inside the transaction that makes it, so the log and the change commit together. */
export async function recordAuditEvent(tx: Queryable, event: AuditEventInput): Promise<void> {
  await tx.query(
    `INSERT INTO audit_events (actor_kind, actor_token_id, actor_person_id, organisation_id, action, resource_type, resource_id, changes)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      event.actor.kind, tokenIdOf(event.actor), personIdOf(event.actor), event.organisationId, event.action, event.resourceType,
      event.resourceId, JSON.stringify(event.changes),
    ],
  );
}

interface AuditRow {
  id: bigint;
  occurred_at: Date;
  actor_kind: Actor['kind'];
  actor_token_id: string | null;
  actor_person_id: string | null;
  organisation_id: string | null;
  action: string;
  resource_type: string;
  resource_id: string;
  changes: AuditChanges;
}

/** A page of audit events, oldest first, after the event `afterId`; optionally one organisation's only. */
export async function listAuditEvents(
  db: Queryable,
  filter: { organisationId?: string | undefined; afterId?: bigint | undefined; limit: number },
): Promise<Page<AuditEvent>> {
  const { rows } = await db.query<AuditRow>(
    `SELECT id, occurred_at, actor_kind, actor_token_id, actor_person_id, organisation_id, action, resource_type, resource_id, changes
     FROM audit_events
     WHERE ($1::text IS NULL OR organisation_id = $1) AND ($2::bigint IS NULL OR id > $2)
     ORDER BY id
     LIMIT $3`,
    [filter.organisationId ?? null, filter.afterId ?? null, filter.limit + 1],
  );
  return {
    items: rows.slice(0, filter.limit).map((row) => ({
      id: row.id, occurredAt: row.occurred_at, actorKind: row.actor_kind, actorTokenId: row.actor_token_id, actorPersonId: row.actor_person_id,
      organisationId: row.organisation_id, action: row.action, resourceType: row.resource_type, resourceId: row.resource_id,
      changes: row.changes,
    })),
    hasMore: rows.length > filter.limit,
  };
}
