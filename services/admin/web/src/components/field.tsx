import type { ComponentChildren } from 'preact';
import { ApiError } from '../api.ts';

/** The message to show beside the field `param`, when `error` is an ApiError naming it. */
export function fieldError(error: unknown, param: string): string | undefined {
  return error instanceof ApiError && error.param === param ? error.message : undefined;
}

/**
 * A labelled form field: `children` is the input, which must carry `id={id}`; a hint and an error
 * are tied to it with aria-describedby by the caller passing `describedBy(id)`.
 */
export function Field(props: { id: string; label: string; hint?: string; error?: string | undefined; children: ComponentChildren }) {
  return (
    <div class={props.error === undefined ? 'field' : 'field invalid'}>
      <label for={props.id}>{props.label}</label>
      {props.children}
      {props.hint === undefined ? null : <p class="hint" id={`${props.id}-hint`}>{props.hint}</p>}
      {props.error === undefined ? null : <p class="field-error" id={`${props.id}-error`} role="alert">{props.error}</p>}
    </div>
  );
}

/** The aria-describedby value of a Field's input: its hint and error paragraphs. */
export function describedBy(id: string, options: { hint?: boolean; error?: string | undefined }): string | undefined {
  const ids = [options.hint === true ? `${id}-hint` : '', options.error === undefined ? '' : `${id}-error`].filter(Boolean);
  return ids.length === 0 ? undefined : ids.join(' ');
}

/** The message of an error no field shows (anything but an ApiError with a param, or any error when `shownParams` is empty). */
export function FormError(props: { error: unknown; shownParams?: string[] }) {
  const { error } = props;
  if (error === undefined || error === null) return null;
  if (error instanceof ApiError && error.param !== null && (props.shownParams ?? []).includes(error.param)) return null;
  const message = error instanceof Error ? error.message : String(error);
  return <p class="form-error" role="alert">{message}</p>;
}
