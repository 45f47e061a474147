import { formatRupees } from './wire.ts';

/** What the pay page shows for one order. */
export interface PayPageView {
  orderId: string;
  amountPaise: bigint;
  status: 'created' | 'attempted' | 'paid';
  receipt: string | null;
  /** Where the browser goes back to (the form posts it along). */
  returnUrl: string;
  /** `fail_then_pay`: "Pay" first fails one attempt, as UPI sometimes does. */
  scenario: string | null;
  /** A line shown above the buttons (e.g. why an action was refused). */
  notice: string | null;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}

/**
 * The local provider's pay page: plain server-rendered HTML with no scripts and no external
 * assets, labelled buttons in one form (a person, a keyboard or a browser test can use it).
 */
export function renderPayPage(view: PayPageView): string {
  const amount = formatRupees(view.amountPaise);
  const hidden = [
    `<input type="hidden" name="return_url" value="${escapeHtml(view.returnUrl)}">`,
    view.scenario === null ? '' : `<input type="hidden" name="scenario" value="${escapeHtml(view.scenario)}">`,
  ].join('');
  const notice = view.notice === null ? '' : `<p role="status" class="notice">${escapeHtml(view.notice)}</p>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Pay ${escapeHtml(amount)} — local payment provider</title>
<style>
body { font-family: system-ui, sans-serif; margin: 0; background: #f4f5f7; color: #1d2330; }
main { max-width: 28rem; margin: 3rem auto; background: #fff; padding: 1.5rem 2rem; border-radius: 0.5rem; box-shadow: 0 1px 4px rgba(0,0,0,0.12); }
h1 { font-size: 1.25rem; margin-top: 0; }
dl { display: grid; grid-template-columns: auto 1fr; gap: 0.25rem 1rem; }
dt { color: #5a6170; }
dd { margin: 0; font-variant-numeric: tabular-nums; word-break: break-all; }
.actions { display: flex; flex-direction: column; gap: 0.5rem; margin-top: 1.25rem; }
button { font: inherit; padding: 0.6rem 1rem; border-radius: 0.375rem; border: 1px solid #1d2330; background: #fff; cursor: pointer; }
button.primary { background: #1d4ed8; border-color: #1d4ed8; color: #fff; }
button:focus-visible { outline: 3px solid #f59e0b; outline-offset: 2px; }
.notice { background: #fff7e6; border: 1px solid #f59e0b; padding: 0.5rem 0.75rem; border-radius: 0.375rem; }
.hint { color: #5a6170; font-size: 0.875rem; }
</style>
</head>
<body>
<main>
<h1>Local payment provider</h1>
<p class="hint">A stand-in for Razorpay on this machine: no money moves. Payments are UPI and captured at once.</p>
<dl>
<dt>Order</dt><dd>${escapeHtml(view.orderId)}</dd>
<dt>Amount</dt><dd>${escapeHtml(amount)}</dd>
<dt>Status</dt><dd>${escapeHtml(view.status)}</dd>
${view.receipt === null ? '' : `<dt>Receipt</dt><dd>${escapeHtml(view.receipt)}</dd>`}
</dl>
${notice}
<form method="post" action="/pay/${encodeURIComponent(view.orderId)}" class="actions">
${hidden}
<button type="submit" name="action" value="pay" class="primary">Pay ${escapeHtml(amount)}</button>
<button type="submit" name="action" value="fail">Fail payment</button>
<button type="submit" name="action" value="pay_twice">Pay twice</button>
<button type="submit" name="action" value="authorize">Authorise only (manual capture)</button>
</form>
</main>
</body>
</html>
`;
}

/** A short page for a pay-page request that cannot be served (unknown order, bad return URL). */
export function renderProblemPage(title: string, detail: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>
<body><main><h1>${escapeHtml(title)}</h1><p>${escapeHtml(detail)}</p></main></body></html>
`;
}

/**
 * The return URL with the Checkout fields appended: to the query, or, when the URL has a `#`
 * fragment (the dashboard routes by hash), to the fragment's own query.
 */
export function withCheckoutFields(returnUrl: string, fields: Record<string, string>): string {
  const query = new URLSearchParams(fields).toString();
  const hashAt = returnUrl.indexOf('#');
  if (hashAt === -1) {
    const url = new URL(returnUrl);
    for (const [name, value] of Object.entries(fields)) url.searchParams.append(name, value);
    return url.toString();
  }
  const fragment = returnUrl.slice(hashAt + 1);
  const separator = fragment.includes('?') ? (fragment.endsWith('?') || fragment.endsWith('&') ? '' : '&') : '?';
  return `${returnUrl.slice(0, hashAt)}#${fragment}${separator}${query}`;
}
