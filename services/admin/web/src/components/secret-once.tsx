import { CopyButton } from './copy-button.tsx';

/** A new secret (API key, link, signing secret), shown this once with a copy button and a warning. */
export function SecretOnce(props: { label: string; secret: string; warning?: string }) {
  return (
    <div class="secret-once" role="group" aria-label={props.label}>
      <p class="warning" role="alert">
        <strong>Copy it now:</strong> {props.warning ?? 'this is the only time it is shown.'}
      </p>
      <label>
        <span>{props.label}</span>
        <input type="text" readOnly value={props.secret} class="mono" onFocus={(event) => event.currentTarget.select()} />
      </label>
      <CopyButton text={props.secret} label={`Copy ${props.label}`} />
    </div>
  );
}
