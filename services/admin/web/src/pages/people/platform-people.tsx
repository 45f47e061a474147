import { useCallback, useEffect, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { Field, FormError, describedBy, fieldError } from '../../components/field.tsx';
import { SecretOnce } from '../../components/secret-once.tsx';
import { Table } from '../../components/table.tsx';
import { useAction } from '../../components/use-action.ts';
import { formatIst } from '../../format.ts';
import { listAll } from '../../lists.ts';
import { useSession } from '../../session.ts';

/** A person as platform admins list them. */
export interface PersonAccount {
  id: string;
  email: string;
  display_name: string;
  platform_admin: boolean;
  memberships: { organisation_id: string; organisation_name: string; role: string }[];
  status: 'active' | 'disabled';
  password_set: boolean;
  created_at: string;
}

/** The answer to issuing a one-time link (setup or password reset). */
interface IssuedLink {
  link: string;
  email_sent: boolean;
}

/** Every person with an account: invite a platform admin (setup link once), disable or enable, issue reset links. */
export function PlatformPeople() {
  const session = useSession();
  const [people, setPeople] = useState<PersonAccount[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [shown, setShown] = useState<{ title: string; link: string; emailed: boolean } | undefined>(undefined);

  const reload = useCallback(async () => {
    try {
      setPeople(await listAll<PersonAccount>('/admin/v1/people'));
      setError(undefined);
    } catch (caught) {
      setError(caught);
    }
  }, []);

  useEffect(() => {
    void reload();
  }, [reload]);

  async function setStatus(person: PersonAccount, status: PersonAccount['status']) {
    await api.send('PATCH', `/admin/v1/people/${person.id}`, { status });
    await reload();
  }

  async function resetLink(person: PersonAccount) {
    const issued = await api.send<IssuedLink>('POST', `/admin/v1/people/${person.id}/password-resets`);
    setShown({ title: `Password-reset link for ${person.email}`, link: issued.link, emailed: issued.email_sent });
  }

  return (
    <>
      <InvitePlatformAdmin onInvited={(issued, email) => {
        setShown({ title: `Setup link for ${email}`, link: issued.link, emailed: issued.email_sent });
        void reload();
      }} />
      {shown === undefined ? null : (
        <div class="card" aria-live="polite">
          <h2>{shown.title}</h2>
          <SecretOnce label="Link" secret={shown.link}
            warning={`this is the only time the link is shown; it works once.${shown.emailed ? ' It was also emailed.' : ' Send it yourself.'}`} />
          <div class="actions"><button type="button" class="secondary" onClick={() => setShown(undefined)}>Done</button></div>
        </div>
      )}
      <FormError error={error} />
      {people === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : (
        <Table
          caption="People"
          rows={people}
          rowKey={(person) => person.id}
          empty="No people yet — invite someone to give them a sign-in."
          columns={[
            {
              header: 'Person', cell: (person) => (
                <>{person.display_name === '' ? person.email : person.display_name}{person.id === session.person?.id ? ' (you)' : ''}
                  <div class="small">{person.email}</div></>
              ),
            },
            {
              header: 'Access', cell: (person) => (
                <>
                  {person.platform_admin ? <span class="pill">platform admin</span> : null}
                  {person.memberships.map((membership) => (
                    <div key={membership.organisation_id} class="small">{membership.organisation_name}: {membership.role}</div>
                  ))}
                  {!person.platform_admin && person.memberships.length === 0 ? 'none' : null}
                </>
              ),
            },
            {
              header: 'Status', cell: (person) => (
                <><span class={`pill pill-${person.status}`}>{person.status}</span>{person.password_set ? null : <div class="small">link not followed yet</div>}</>
              ),
            },
            { header: 'Created (IST)', cell: (person) => formatIst(person.created_at) },
            {
              header: 'Actions', cell: (person) => (
                <div class="row-actions">
                  <ConfirmButton label="Reset link" title={`Issue a password-reset link for ${person.email}?`} confirmLabel="Issue link" onConfirm={() => resetLink(person)}>
                    <p>A one-time link that sets a new password is made and shown once.</p>
                  </ConfirmButton>
                  {person.status === 'active' ? (
                    <ConfirmButton label="Disable" title={`Disable ${person.email}?`} confirmLabel="Disable" danger onConfirm={() => setStatus(person, 'disabled')}>
                      <p>They cannot sign in, and every session of theirs ends at once. Their memberships stay.</p>
                    </ConfirmButton>
                  ) : (
                    <ConfirmButton label="Enable" title={`Enable ${person.email}?`} confirmLabel="Enable" onConfirm={() => setStatus(person, 'active')}>
                      <p>They can sign in again with their password.</p>
                    </ConfirmButton>
                  )}
                </div>
              ),
            },
          ]}
        />
      )}
    </>
  );
}

/** Invites a new platform admin by email; their setup link goes to `onInvited`, to be shown once. */
function InvitePlatformAdmin(props: { onInvited(issued: IssuedLink, email: string): void }) {
  const [email, setEmail] = useState('');
  const { busy, error, run } = useAction();
  const emailError = fieldError(error, 'email');

  async function submit(event: Event) {
    event.preventDefault();
    await run(async () => {
      const answer = await api.send<IssuedLink & { person: PersonAccount }>('POST', '/admin/v1/people', { email, platform_admin: true });
      props.onInvited(answer, answer.person.email);
      setEmail('');
    });
  }

  return (
    <form class="card inline-form" onSubmit={(event) => void submit(event)}>
      <h2>Invite a platform admin</h2>
      <p class="hint">Platform admins see and change every organisation. Others join through an organisation owner's invitation.</p>
      <Field id="platform-admin-email" label="Email" error={emailError}>
        <input id="platform-admin-email" type="email" required maxLength={254} value={email} autoComplete="off"
          aria-describedby={describedBy('platform-admin-email', { error: emailError })}
          onInput={(event) => setEmail(event.currentTarget.value)} />
      </Field>
      <FormError error={error} shownParams={['email']} />
      <div class="actions"><button type="submit" class="primary" disabled={busy} aria-busy={busy}>Invite platform admin</button></div>
    </form>
  );
}
