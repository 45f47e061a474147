import { useState } from 'preact/hooks';

/** Copies text with the Clipboard API, or (on http:// origins, where it is missing) a hidden textarea and execCommand. */
async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard !== undefined) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // Refused (no permission, not a secure context): the fallback below may still work.
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.className = 'offscreen';
  document.body.append(area);
  area.select();
  // execCommand is deprecated but is the only copy path without the Clipboard API.
  const copied = document.execCommand('copy');
  area.remove();
  return copied;
}

/** A button that copies `text` and says so (to screen readers too). */
export function CopyButton(props: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  return (
    <span class="copy">
      <button type="button" class="secondary" onClick={() => void copyText(props.text).then((ok) => setState(ok ? 'copied' : 'failed'))}>
        {props.label ?? 'Copy'}
      </button>
      <span role="status" aria-live="polite" class="copy-status">
        {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed: select the text and copy it by hand' : ''}
      </span>
    </span>
  );
}
