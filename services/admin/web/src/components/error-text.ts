// The one place where the admin API's validation messages become text for people: raw field names
// (gstin, body.budget.monthly_cap_micros) turn into the labels the forms show, and a few terse
// phrasings are reworded. api.ts applies it to every error message it receives.

/** The label a person sees for each request field the API may name (the forms' labels, without units). */
const fieldLabels: Readonly<Record<string, string>> = {
  address: 'Address',
  alias: 'Alias',
  amount_micros: 'Amount',
  amount_paise: 'Amount',
  country: 'Country',
  credit_micros: 'Credit',
  display_name: 'Name',
  email: 'Email',
  gateway_model: 'Gateway model',
  gstin: 'GSTIN',
  legal_name: 'Legal name',
  low_balance_threshold_micros: 'Alert below',
  monthly_cap_micros: 'Monthly cap',
  name: 'Name',
  password: 'Password',
  password_repeat: 'Repeated password',
  price_paise: 'Price',
  reason: 'Reason',
  response_retention_s: 'Keep for',
  role: 'Role',
  rpm_limit: 'Requests per minute',
  soft_alert_percent: 'Soft alert',
  sort_order: 'Order',
  state_code: 'State (place of supply)',
  url: 'URL',
};

/** Terse validator phrasings and their plain rewording (applied after the field's label and a colon). */
const rewordings: ReadonlyArray<[RegExp, string]> = [
  [/^has a wrong check character(?: \(a typing error\?\))?/, 'the check character is wrong (a typing error?)'],
  [/^must not be empty/, 'please fill this in'],
];

/** The label of a field path such as "body.budget.monthly_cap_micros" (its last part), or undefined when unknown. */
function labelOf(path: string): string | undefined {
  const last = path.split('.').at(-1) ?? path;
  return Object.hasOwn(fieldLabels, last) ? fieldLabels[last] : undefined;
}

/**
 * `message` with raw field names replaced by their labels: each "; "-separated part that starts with
 * a known field ("gstin has a wrong check character", "rpm_limit: must be …") becomes
 * "Label: rest"; unknown names and other text are left as they are.
 */
export function readableErrorText(message: string): string {
  return message.split('; ').map((part) => {
    const match = /^((?:body|query|header)\.)?([a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)*)(:\s*|\s+)(.*)$/s.exec(part);
    if (match === null) return part;
    const label = labelOf(match[2]!);
    if (label === undefined) return part;
    let rest = match[4]!;
    for (const [pattern, replacement] of rewordings) rest = rest.replace(pattern, replacement);
    return `${label}: ${rest}`;
  }).join('; ');
}
