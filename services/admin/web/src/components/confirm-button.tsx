import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { Dialog } from './dialog.tsx';
import { FormError } from './field.tsx';
import { useAction } from './use-action.ts';

/**
 * A button that asks first: it opens a dialog saying what will happen, and runs `onConfirm` only
 * when the person confirms; an error from it stays in the dialog.
 */
export function ConfirmButton(props: {
  label: string;
  title: string;
  confirmLabel: string;
  /** What will happen, in plain words. */
  children: ComponentChildren;
  onConfirm(): Promise<void>;
  danger?: boolean;
  disabled?: boolean;
}) {
  const [open, setOpen] = useState(false);
  const { busy, error, run } = useAction();

  async function confirm() {
    await run(async () => {
      await props.onConfirm();
      setOpen(false);
    });
  }

  return (
    <>
      <button type="button" class={props.danger === true ? 'danger' : 'secondary'} disabled={props.disabled} onClick={() => setOpen(true)}>
        {props.label}
      </button>
      <Dialog open={open} title={props.title} onClose={() => { if (!busy) setOpen(false); }}>
        <div class="dialog-body">{props.children}</div>
        <FormError error={error} />
        <div class="actions">
          <button type="button" class="secondary" onClick={() => setOpen(false)} disabled={busy}>Cancel</button>
          <button type="button" class={props.danger === true ? 'danger' : 'primary'} onClick={() => void confirm()} disabled={busy} aria-busy={busy}>
            {busy ? 'Working…' : props.confirmLabel}
          </button>
        </div>
      </Dialog>
    </>
  );
}
