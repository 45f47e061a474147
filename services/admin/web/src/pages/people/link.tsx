import { useEffect, useState } from 'preact/hooks';
import { ApiError, api } from '../../api.ts';
import { Field, FormError, describedBy, fieldError } from '../../components/field.tsx';
import { useAction } from '../../components/use-action.ts';
import { formatIst } from '../../format.ts';
import { useSession, type SessionAnswer } from '../../session.ts';

/** What GET /auth/links/{token} tells about a link. */
interface LinkInfo {
  kind: 'invitation' | 'password_reset' | 'setup';
  email: string;
  organisation_name: string | null;
  role: string | null;
  expires_at: string;
}

/** The shortest and longest password the admin accepts (characters). */
const passwordMinLength = 12;
const passwordMaxLength = 200;

const headings: Record<LinkInfo['kind'], string> = {
  invitation: 'Accept your invitation',
  password_reset: 'Choose a new password',
  setup: 'Set up the first platform admin',
};

/** An invitation, password reset or setup link (#/link/<token>): choose a password, then you are signed in. */
export function LinkPage(props: { token: string }) {
  const session = useSession();
  const [info, setInfo] = useState<LinkInfo | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const [displayName, setDisplayName] = useState('');
  const [password, setPassword] = useState('');
  const [repeat, setRepeat] = useState('');
  const { busy, error, setError, run } = useAction();

  useEffect(() => {
    api.get<LinkInfo>(`/auth/links/${encodeURIComponent(props.token)}`).then(setInfo, setLoadError);
  }, [props.token]);

  async function submit(event: Event) {
    event.preventDefault();
    if (password !== repeat) {
      setError(new ApiError('The two passwords differ.', 400, 'invalid_request', 'password_repeat'));
      return;
    }
    await run(async () => {
      const body = { password, ...(displayName.trim() === '' ? {} : { display_name: displayName.trim() }) };
      await session.signedIn(await api.send<SessionAnswer>('POST', `/auth/links/${encodeURIComponent(props.token)}`, body));
    });
  }

  if (loadError !== undefined) {
    return (
      <main id="main" class="narrow" tabIndex={-1}>
        <h1>This link cannot be used</h1>
        <FormError error={loadError} />
        <p><a href="#/sign-in">Go to sign-in</a></p>
      </main>
    );
  }
  if (info === undefined) return <main id="main" class="narrow"><p role="status">Checking the link…</p></main>;

  const passwordError = fieldError(error, 'password');
  const repeatError = fieldError(error, 'password_repeat');
  const nameError = fieldError(error, 'display_name');
  return (
    <main id="main" class="narrow" tabIndex={-1}>
      <h1>{headings[info.kind]}</h1>
      <p>
        For <strong>{info.email}</strong>
        {info.organisation_name === null ? '' : <> in <strong>{info.organisation_name}</strong>{info.role === null ? '' : ` as ${info.role}`}</>}.
        {' '}The link works once, until {formatIst(info.expires_at)}.
      </p>
      <form class="card" onSubmit={(event) => void submit(event)}>
        <input type="email" name="email" autoComplete="username" value={info.email} readOnly hidden />
        {info.kind === 'password_reset' ? null : (
          <Field id="link-name" label="Your name (optional)" error={nameError}>
            <input id="link-name" type="text" autoComplete="name" maxLength={200} value={displayName}
              aria-describedby={describedBy('link-name', { error: nameError })}
              onInput={(event) => setDisplayName(event.currentTarget.value)} />
          </Field>
        )}
        <Field id="link-password" label="New password" hint={`At least ${passwordMinLength} characters.`} error={passwordError}>
          <input id="link-password" type="password" autoComplete="new-password" required minLength={passwordMinLength} maxLength={passwordMaxLength}
            value={password} aria-describedby={describedBy('link-password', { hint: true, error: passwordError })}
            onInput={(event) => setPassword(event.currentTarget.value)} />
        </Field>
        <Field id="link-repeat" label="Repeat the password" error={repeatError}>
          <input id="link-repeat" type="password" autoComplete="new-password" required value={repeat}
            aria-describedby={describedBy('link-repeat', { error: repeatError })}
            onInput={(event) => setRepeat(event.currentTarget.value)} />
        </Field>
        <FormError error={error} shownParams={['password', 'password_repeat', 'display_name']} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy} aria-busy={busy}>{busy ? 'Saving…' : 'Save and sign in'}</button>
        </div>
      </form>
    </main>
  );
}
