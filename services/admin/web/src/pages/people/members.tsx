import { useCallback, useEffect, useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { Dialog } from '../../components/dialog.tsx';
import { Field, FormError, describedBy, fieldError } from '../../components/field.tsx';
import { SecretOnce } from '../../components/secret-once.tsx';
import { Table } from '../../components/table.tsx';
import { useAction } from '../../components/use-action.ts';
import { formatIst } from '../../format.ts';
import { allows, type PageProps } from '../../page-props.ts';
import { useSession } from '../../session.ts';

/** A member's role in the organisation. */
type OrganisationRole = 'viewer' | 'developer' | 'owner';

/** A member of the organisation. */
interface Member {
  person_id: string;
  email: string;
  display_name: string;
  role: OrganisationRole;
  joined_at: string;
}

/** An invitation (its link is only in the answer that created it). */
interface Invitation {
  id: string;
  organisation_id: string;
  email: string;
  role: OrganisationRole;
  status: 'pending' | 'used' | 'revoked' | 'expired';
  created_at: string;
  expires_at: string;
}

/** A list the API answers whole (members, invitations). */
interface WholeList<Item> {
  object: 'list';
  data: Item[];
}

/** The answer to an invitation or a reset: the one-time link, shown once. */
interface IssuedLink {
  link: string;
  expires_at: string;
  email_sent: boolean;
}

/** A one-time link to show once, and whom it is for. */
interface ShownLink {
  title: string;
  link: string;
  note: string;
}

const roles: OrganisationRole[] = ['viewer', 'developer', 'owner'];
const roleText: Record<OrganisationRole, string> = {
  viewer: 'Viewer: reads everything',
  developer: 'Developer: also manages projects, keys and budgets',
  owner: 'Owner: also manages members, alerts and the webhook',
};

/** Who will receive a link, and whether it was emailed. */
function linkNote(issued: IssuedLink, email: string): string {
  const sent = issued.email_sent ? `It was also emailed to ${email}.` : `Send it to ${email} yourself.`;
  return `${sent} It works once, until ${formatIst(issued.expires_at)}.`;
}

/**
 * The organisation's members and their roles; owners invite by email (the link shown once),
 * revoke pending invitations, change roles, remove members and issue password-reset links.
 */
export function MembersPage(props: PageProps) {
  const { organisationId } = props;
  const can = (operationId: string) => allows(props.allowed, operationId);
  const seesInvitations = can('listInvitations');
  const changesMembers = can('updateMember') || can('createMemberPasswordReset') || can('removeMember');
  const session = useSession();
  const [members, setMembers] = useState<Member[] | undefined>(undefined);
  const [invitations, setInvitations] = useState<Invitation[]>([]);
  const [error, setError] = useState<unknown>(undefined);
  const [shown, setShown] = useState<ShownLink | undefined>(undefined);
  const [changing, setChanging] = useState<Member | undefined>(undefined);

  const reload = useCallback(async () => {
    if (organisationId === undefined) return;
    try {
      const base = `/admin/v1/organisations/${organisationId}`;
      const [memberList, invitationList] = await Promise.all([
        api.get<WholeList<Member>>(`${base}/members`),
        seesInvitations ? api.get<WholeList<Invitation>>(`${base}/invitations`) : Promise.resolve({ object: 'list' as const, data: [] }),
      ]);
      setMembers(memberList.data);
      setInvitations(invitationList.data.filter((invitation) => invitation.status === 'pending'));
      setError(undefined);
    } catch (caught) {
      setError(caught);
    }
  }, [organisationId, seesInvitations]);

  useEffect(() => {
    void reload();
  }, [reload]);

  if (organisationId === undefined) return <section><h1>Members</h1><p>Choose an organisation.</p></section>;
  const base = `/admin/v1/organisations/${organisationId}`;
  const myId = session.person?.id;

  /** After a change to the signed-in person's own membership, their memberships (and so the switcher) change too. */
  async function afterChange(member: Member) {
    if (member.person_id === myId) await session.refresh();
    await reload();
  }

  async function remove(member: Member) {
    await api.send('DELETE', `${base}/members/${member.person_id}`);
    await afterChange(member);
  }

  async function resetLink(member: Member) {
    const issued = await api.send<IssuedLink>('POST', `${base}/members/${member.person_id}/password-resets`);
    setShown({ title: `Password-reset link for ${member.email}`, link: issued.link, note: linkNote(issued, member.email) });
  }

  async function revoke(invitation: Invitation) {
    await api.send('DELETE', `${base}/invitations/${invitation.id}`);
    await reload();
  }

  return (
    <section>
      <h1>Members</h1>
      <FormError error={error} />
      {can('createInvitation') ? (
        <InviteForm organisationId={organisationId} onInvited={(issued, email) => {
          setShown({ title: `Invitation link for ${email}`, link: issued.link, note: linkNote(issued, email) });
          void reload();
        }} />
      ) : <p class="hint">You can see the members; an owner can invite and change them.</p>}

      {shown === undefined ? null : (
        <div class="card" aria-live="polite">
          <h2>{shown.title}</h2>
          <SecretOnce label="Link" secret={shown.link} warning={`this is the only time the link is shown. ${shown.note}`} />
          <div class="actions"><button type="button" class="secondary" onClick={() => setShown(undefined)}>Done</button></div>
        </div>
      )}

      {members === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : (
        <Table
          caption="Members"
          showCaption
          rows={members}
          rowKey={(member) => member.person_id}
          empty="No members."
          columns={[
            {
              header: 'Member', cell: (member) => (
                <>{member.display_name === '' ? member.email : member.display_name}{member.person_id === myId ? ' (you)' : ''}
                  <div class="small">{member.email}</div></>
              ),
            },
            { header: 'Role', cell: (member) => <span class="pill">{member.role}</span> },
            { header: 'Joined (IST)', cell: (member) => formatIst(member.joined_at) },
            ...(changesMembers ? [{
              header: 'Actions',
              cell: (member: Member) => {
                const who = member.display_name === '' ? member.email : member.display_name;
                return (
                  <div class="row-actions">
                    {can('updateMember') ? <button type="button" class="secondary" onClick={() => setChanging(member)} aria-label={`Change the role of ${who}`}>Change role</button> : null}
                    {can('createMemberPasswordReset') ? (
                      <ConfirmButton label="Reset link" title={`Issue a password-reset link for ${who}?`} confirmLabel="Issue link" onConfirm={() => resetLink(member)}>
                        <p>A one-time link that sets a new password for {member.email} is made and shown once. Their current password keeps working until they use it.</p>
                      </ConfirmButton>
                    ) : null}
                    {can('removeMember') ? (
                      <ConfirmButton label="Remove" title={`Remove ${who}?`} confirmLabel="Remove" danger onConfirm={() => remove(member)}>
                        <p>{member.person_id === myId ? 'You lose' : `${who} loses`} access to this organisation at once. The last owner cannot be removed.</p>
                      </ConfirmButton>
                    ) : null}
                  </div>
                );
              },
            }] : []),
          ]}
        />
      )}

      {seesInvitations ? <PendingInvitations invitations={invitations} onRevoke={can('revokeInvitation') ? revoke : undefined} /> : null}

      {changing === undefined ? null : (
        <RoleDialog organisationId={organisationId} member={changing} isSelf={changing.person_id === myId} onClose={() => setChanging(undefined)}
          onDone={() => { const member = changing; setChanging(undefined); void afterChange(member); }} />
      )}
    </section>
  );
}

/** The pending invitations; with `onRevoke` (when the person may revoke them) each has a Revoke button. */
function PendingInvitations(props: { invitations: Invitation[]; onRevoke: ((invitation: Invitation) => Promise<void>) | undefined }) {
  const { onRevoke } = props;
  return (
    <Table
      caption="Pending invitations"
      showCaption
      rows={props.invitations}
      rowKey={(invitation) => invitation.id}
      empty="No pending invitations — invite someone to give them access."
      columns={[
        { header: 'Email', cell: (invitation) => invitation.email },
        { header: 'Role', cell: (invitation) => <span class="pill">{invitation.role}</span> },
        { header: 'Sent (IST)', cell: (invitation) => formatIst(invitation.created_at) },
        { header: 'Expires (IST)', cell: (invitation) => formatIst(invitation.expires_at) },
        ...(onRevoke === undefined ? [] : [{
          header: 'Actions', cell: (invitation: Invitation) => (
            <ConfirmButton label="Revoke" title={`Revoke the invitation of ${invitation.email}?`} confirmLabel="Revoke" danger onConfirm={() => onRevoke(invitation)}>
              <p>The invitation link stops working. You can invite {invitation.email} again later.</p>
            </ConfirmButton>
          ),
        }]),
      ]}
    />
  );
}

/** The invitation form: an email and a role; the link goes to `onInvited`, to be shown once. */
function InviteForm(props: { organisationId: string; onInvited(issued: IssuedLink, email: string): void }) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<OrganisationRole>('viewer');
  const { busy, error, run } = useAction();
  const emailError = fieldError(error, 'email');
  const roleError = fieldError(error, 'role');

  async function submit(event: Event) {
    event.preventDefault();
    await run(async () => {
      const answer = await api.send<IssuedLink & { invitation: Invitation }>('POST', `/admin/v1/organisations/${props.organisationId}/invitations`, { email, role });
      props.onInvited({ link: answer.link, expires_at: answer.invitation.expires_at, email_sent: answer.email_sent }, answer.invitation.email);
      setEmail('');
    });
  }

  return (
    <form class="card inline-form" onSubmit={(event) => void submit(event)}>
      <h2>Invite someone</h2>
      <Field id="invite-email" label="Email" error={emailError}>
        <input id="invite-email" type="email" required maxLength={254} value={email} autoComplete="off"
          aria-describedby={describedBy('invite-email', { error: emailError })}
          onInput={(event) => setEmail(event.currentTarget.value)} />
      </Field>
      <Field id="invite-role" label="Role" error={roleError}>
        <select id="invite-role" value={role} onChange={(event) => setRole(event.currentTarget.value as OrganisationRole)}
          aria-describedby={describedBy('invite-role', { error: roleError })}>
          {roles.map((option) => <option key={option} value={option}>{roleText[option]}</option>)}
        </select>
      </Field>
      <FormError error={error} shownParams={['email', 'role']} />
      <div class="actions"><button type="submit" class="primary" disabled={busy} aria-busy={busy}>Invite</button></div>
    </form>
  );
}

/** Changes a member's role; the API refuses (409) to leave the organisation without an owner. */
function RoleDialog(props: { organisationId: string; member: Member; isSelf: boolean; onClose(): void; onDone(): void }) {
  const [role, setRole] = useState<OrganisationRole>(props.member.role);
  const { busy, error, run } = useAction();
  const who = props.member.display_name === '' ? props.member.email : props.member.display_name;

  async function submit(event: Event) {
    event.preventDefault();
    await run(async () => {
      await api.send('PATCH', `/admin/v1/organisations/${props.organisationId}/members/${props.member.person_id}`, { role });
      props.onDone();
    }, { staysBusyOnSuccess: true });
  }

  return (
    <Dialog open title={`Role of ${who}`} onClose={props.onClose}>
      <form onSubmit={(event) => void submit(event)}>
        <Field id="member-role" label="Role">
          <select id="member-role" value={role} autoFocus onChange={(event) => setRole(event.currentTarget.value as OrganisationRole)}>
            {roles.map((option) => <option key={option} value={option}>{roleText[option]}</option>)}
          </select>
        </Field>
        {props.isSelf && props.member.role === 'owner' && role !== 'owner'
          ? <p class="warning">You are changing your own role: you will no longer manage members, alerts or the webhook.</p>
          : null}
        <FormError error={error} />
        <div class="actions">
          <button type="button" class="secondary" onClick={props.onClose}>Cancel</button>
          <button type="submit" class="primary" disabled={busy || role === props.member.role} aria-busy={busy}>Save role</button>
        </div>
      </form>
    </Dialog>
  );
}
