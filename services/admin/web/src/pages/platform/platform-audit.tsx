import { useEffect, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import type { ListPage, Organisation } from '../../api-types.ts';
import { Field, FormError } from '../../components/field.tsx';
import { Table } from '../../components/table.tsx';
import { formatIst } from '../../format.ts';
import { listAll } from '../../lists.ts';
import { auditActorText, auditChangeLines, type AuditEvent } from './audit-text.ts';
import type { PersonAccount } from '../people/platform-people.tsx';

/** Events per page. */
const pageSize = 50;

/** The audit log, oldest first as the API pages it: who (person email or token id) did what, when, with before/after values. */
export function PlatformAudit() {
  const [organisationId, setOrganisationId] = useState('');
  /** The `after` of each page shown so far: [] on the first page. */
  const [afters, setAfters] = useState<string[]>([]);
  const [page, setPage] = useState<ListPage<AuditEvent> | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [organisations, setOrganisations] = useState<Organisation[]>([]);
  const [emails, setEmails] = useState<ReadonlyMap<string, string>>(new Map());

  useEffect(() => {
    listAll<Organisation>('/admin/v1/organisations').then(setOrganisations, setError);
    listAll<PersonAccount>('/admin/v1/people').then((people) => setEmails(new Map(people.map((person) => [person.id, person.email]))), setError);
  }, []);

  const after = afters.at(-1);
  useEffect(() => {
    api.get<ListPage<AuditEvent>>('/admin/v1/audit-events', { limit: pageSize, after, organisation_id: organisationId === '' ? undefined : organisationId })
      .then((answer) => {
        setPage(answer);
        setError(undefined);
      }, setError);
  }, [organisationId, after]);

  const organisationName = new Map(organisations.map((organisation) => [organisation.id, organisation.name]));
  return (
    <>
      <div class="card inline-form">
        <Field id="audit-organisation" label="Organisation">
          <select id="audit-organisation" value={organisationId} onChange={(event) => {
            setOrganisationId(event.currentTarget.value);
            setAfters([]);
          }}>
            <option value="">All organisations</option>
            {organisations.map((organisation) => <option key={organisation.id} value={organisation.id}>{organisation.name}</option>)}
          </select>
        </Field>
      </div>
      <FormError error={error} />
      {page === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : (
        <>
          <Table
            caption="Audit events, oldest first"
            rows={page.data}
            rowKey={(event) => event.id}
            empty="No audit events."
            columns={[
              { header: 'Time (IST)', cell: (event) => formatIst(event.occurred_at) },
              { header: 'Who', cell: (event) => auditActorText(event.actor, emails) },
              {
                header: 'What', cell: (event) => (
                  <><span class="mono">{event.action}</span><div class="small">{event.resource_type} <span class="mono">{event.resource_id}</span></div></>
                ),
              },
              {
                header: 'Organisation', cell: (event) => event.organisation_id === null
                  ? '—'
                  : organisationName.get(event.organisation_id) ?? <span class="mono small">{event.organisation_id}</span>,
              },
              {
                header: 'Changes', cell: (event) => {
                  const lines = auditChangeLines(event.changes);
                  return lines.length === 0 ? '—' : <ul class="small changes">{lines.map((line) => <li key={line}>{line}</li>)}</ul>;
                },
              },
            ]}
          />
          <nav class="actions" aria-label="Audit log pages">
            <button type="button" class="secondary" disabled={afters.length === 0} onClick={() => setAfters([])}>First page</button>
            <button type="button" class="secondary" disabled={afters.length === 0} onClick={() => setAfters(afters.slice(0, -1))}>Previous</button>
            <span class="small">Page {afters.length + 1}</span>
            <button type="button" class="secondary" disabled={!page.has_more || page.data.length === 0}
              onClick={() => setAfters([...afters, page.data.at(-1)!.id])}>Next</button>
          </nav>
        </>
      )}
    </>
  );
}
