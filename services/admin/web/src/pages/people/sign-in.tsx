import { useState } from 'preact/hooks';
import { ApiError, api } from '../../api.ts';
import { Field, FormError } from '../../components/field.tsx';
import { useAction } from '../../components/use-action.ts';
import { useSession, type SessionAnswer } from '../../session.ts';

/** The sign-in form (email and password); `notice` says why it is shown (signed out, session ended). */
export function SignInPage(props: { notice?: string | undefined; failure?: string | undefined }) {
  const session = useSession();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const { busy, error, run } = useAction();

  async function submit(event: Event) {
    event.preventDefault();
    await run(async () => {
      try {
        await session.signedIn(await api.send<SessionAnswer>('POST', '/auth/sign-in', { email: email.trim(), password }));
      } catch (caught) {
        setPassword('');
        if (caught instanceof ApiError && caught.status === 429) {
          throw new Error(`Too many attempts. Try again in ${caught.retryAfterSeconds ?? 60} seconds.`);
        }
        throw caught;
      }
    });
  }

  return (
    <main id="main" class="narrow" tabIndex={-1}>
      <h1>Sign in to the gateway dashboard</h1>
      {props.notice === undefined ? null : <p class="notice" role="status">{props.notice}</p>}
      {props.failure === undefined ? null : <p class="form-error" role="alert">The admin could not be reached: {props.failure}</p>}
      <form onSubmit={(event) => void submit(event)} class="card" noValidate={false}>
        <Field id="sign-in-email" label="Email">
          <input id="sign-in-email" type="email" name="email" autoComplete="username" required value={email}
            onInput={(event) => setEmail(event.currentTarget.value)} />
        </Field>
        <Field id="sign-in-password" label="Password">
          <input id="sign-in-password" type="password" name="password" autoComplete="current-password" required value={password}
            onInput={(event) => setPassword(event.currentTarget.value)} />
        </Field>
        <FormError error={error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy} aria-busy={busy}>{busy ? 'Signing in…' : 'Sign in'}</button>
        </div>
      </form>
      <p class="hint">Forgot your password? Ask an owner of your organisation (or a platform admin) for a reset link.</p>
    </main>
  );
}
