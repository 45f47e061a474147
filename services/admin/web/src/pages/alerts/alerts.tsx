import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError, api } from '../../api.ts';
import type { Alert } from '../../api-types.ts';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { Field, FormError, describedBy, fieldError } from '../../components/field.tsx';
import { SecretOnce } from '../../components/secret-once.tsx';
import { Table } from '../../components/table.tsx';
import { useAction } from '../../components/use-action.ts';
import { formatIst, formatRupees, rupeesToMicros } from '../../format.ts';
import { useLive } from '../../live.ts';
import { allows, type AllowedOperations, type PageProps } from '../../page-props.ts';
import { rupeeInput } from '../common/rupee-text.ts';

/** A page of a newest-first list (alerts, deliveries). */
interface CursorPage<Item> {
  object: 'list';
  data: Item[];
  next_cursor: string | null;
}

/** The organisation's webhook (never its secret, only a hint). */
interface Webhook {
  url: string;
  format: 'json' | 'slack';
  secret_hint: string;
  created_at: string;
  updated_at: string;
}

/** The answer to PUT .../webhook: the signing secret only when one was made. */
interface WebhookSaved {
  webhook: Webhook;
  signing_secret: string | null;
}

/** One attempt of a delivery. */
interface DeliveryAttempt {
  attempt: number;
  attempted_at: string;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
  next_attempt_at: string | null;
}

/** One alert's delivery to one channel. */
interface Delivery {
  id: string;
  alert_id: string;
  alert_kind: 'budget_soft' | 'low_balance' | 'test';
  channel: 'webhook' | 'email';
  state: 'pending' | 'delivered' | 'failed';
  next_attempt_at: string | null;
  created_at: string;
  attempts: DeliveryAttempt[];
}

/** The organisation's alert settings. */
interface AlertSettings {
  low_balance_threshold_micros: string | null;
}

const alertKindText: Record<Alert['kind'] | 'test', string> = {
  budget_soft: 'Budget soft alert',
  low_balance: 'Low balance',
  test: 'Test',
};

/** How often the delivery log is re-read while a delivery is still pending, ms. */
const pendingRefreshMs = 3_000;

/** Alerts of the organisation (live), its low-balance threshold, and its signed webhook with the delivery log (owners change them). */
export function AlertsPage(props: PageProps) {
  const { organisationId } = props;
  if (organisationId === undefined) return <section><h1>Alerts</h1><p>Choose an organisation.</p></section>;
  return (
    <section>
      <h1>Alerts</h1>
      <AlertList organisationId={organisationId} />
      <LowBalanceSettings organisationId={organisationId} canChange={allows(props.allowed, 'putAlertSettings')} />
      {allows(props.allowed, 'getWebhook') ? <WebhookSettings organisationId={organisationId} allowed={props.allowed} /> : (
        <div class="card">
          <h2>Webhook</h2>
          <p>Only the organisation's owners see and change its alert webhook: its URL may itself be a secret.</p>
        </div>
      )}
    </section>
  );
}

/** The alert list, newest first; alerts pushed live are prepended. */
function AlertList(props: { organisationId: string }) {
  const [alerts, setAlerts] = useState<Alert[] | undefined>(undefined);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  const [loadingMore, setLoadingMore] = useState(false);
  const path = `/admin/v1/organisations/${props.organisationId}/alerts`;

  useEffect(() => {
    api.get<CursorPage<Alert>>(path).then((page) => {
      setAlerts(page.data);
      setNextCursor(page.next_cursor);
    }, setError);
  }, [path]);

  useLive(props.organisationId, (message) => {
    if (message.type !== 'alert') return;
    setAlerts((current) => (current === undefined || current.some((alert) => alert.id === message.alert.id) ? current : [message.alert, ...current]));
  });

  async function more() {
    if (nextCursor === null) return;
    setLoadingMore(true);
    try {
      const page = await api.get<CursorPage<Alert>>(path, { cursor: nextCursor });
      setAlerts((current) => [...(current ?? []), ...page.data.filter((alert) => !(current ?? []).some((shown) => shown.id === alert.id))]);
      setNextCursor(page.next_cursor);
    } catch (caught) {
      setError(caught);
    } finally {
      setLoadingMore(false);
    }
  }

  return (
    <div class="card">
      <h2>Recent alerts</h2>
      <FormError error={error} />
      {alerts === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : (
        <>
          <Table
            caption="Alerts, newest first"
            rows={alerts}
            rowKey={(alert) => alert.id}
            empty="No alerts yet — set a project's monthly budget (Projects › Budget) or the low-balance alert below, and alerts show here and on the webhook."
            columns={[
              { header: 'Time (IST)', cell: (alert) => formatIst(alert.occurred_at) },
              { header: 'Kind', cell: (alert) => alertKindText[alert.kind] },
              { header: 'Message', cell: (alert) => alert.message },
            ]}
          />
          {nextCursor === null ? null : (
            <div class="actions">
              <button type="button" class="secondary" onClick={() => void more()} disabled={loadingMore} aria-busy={loadingMore}>Show older alerts</button>
            </div>
          )}
        </>
      )}
    </div>
  );
}

/** The low-balance threshold in rupees: owners set or clear it, others read it. */
function LowBalanceSettings(props: { organisationId: string; canChange: boolean }) {
  const path = `/admin/v1/organisations/${props.organisationId}/alert-settings`;
  const [settings, setSettings] = useState<AlertSettings | undefined>(undefined);
  const [rupees, setRupees] = useState('');
  const { busy, error, setError, run } = useAction();
  const [saved, setSaved] = useState<string | undefined>(undefined);
  const thresholdError = fieldError(error, 'low_balance_threshold_micros');

  const adopt = useCallback((answer: AlertSettings) => {
    setSettings(answer);
    setRupees(answer.low_balance_threshold_micros === null ? '' : rupeeInput(answer.low_balance_threshold_micros));
  }, []);

  useEffect(() => {
    api.get<AlertSettings>(path).then(adopt, setError);
  }, [path, adopt]);

  async function put(threshold: string | null) {
    await run(async () => {
      setSaved(undefined);
      adopt(await api.send<AlertSettings>('PUT', path, { low_balance_threshold_micros: threshold }));
      setSaved(threshold === null ? 'Low-balance alert turned off.' : 'Threshold saved.');
    });
  }

  function save(event: Event) {
    event.preventDefault();
    try {
      void put(rupeesToMicros(rupees));
    } catch (caught) {
      setError(new ApiError((caught as Error).message, 400, 'invalid_request', 'low_balance_threshold_micros'));
    }
  }

  const current = settings?.low_balance_threshold_micros;
  return (
    <div class="card">
      <h2>Low-balance alert</h2>
      {settings === undefined ? (error === undefined ? <p role="status">Loading…</p> : <FormError error={error} />) : (
        <>
          <p>
            {current === null || current === undefined
              ? 'No low-balance alert: none is raised however low the balance goes.'
              : <>An alert is raised when the available balance falls below <strong>{formatRupees(current)}</strong>.</>}
          </p>
          {props.canChange ? (
            <form class="inline-form" onSubmit={save}>
              <Field id="low-balance-threshold" label="Alert below (₹)" hint="For example 10,000 or 1,00,000.50" error={thresholdError}>
                <input id="low-balance-threshold" type="text" inputMode="decimal" required value={rupees}
                  aria-describedby={describedBy('low-balance-threshold', { hint: true, error: thresholdError })}
                  onInput={(event) => setRupees(event.currentTarget.value)} />
              </Field>
              <FormError error={error} shownParams={['low_balance_threshold_micros']} />
              {saved === undefined ? null : <p class="notice" role="status">{saved}</p>}
              <div class="actions">
                {current === null ? null : (
                  <button type="button" class="secondary" disabled={busy} onClick={() => void put(null)}>Turn off</button>
                )}
                <button type="submit" class="primary" disabled={busy} aria-busy={busy}>Save threshold</button>
              </div>
            </form>
          ) : null}
        </>
      )}
    </div>
  );
}

/** The webhook: URL and format, the signing secret shown once, rotation, removal, a test send and the delivery log. */
function WebhookSettings(props: { organisationId: string; allowed: AllowedOperations | undefined }) {
  const can = (operationId: string) => allows(props.allowed, operationId);
  const path = `/admin/v1/organisations/${props.organisationId}/webhook`;
  const [webhook, setWebhook] = useState<Webhook | null | undefined>(undefined);
  const [url, setUrl] = useState('');
  const [format, setFormat] = useState<Webhook['format']>('json');
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const { busy, error, setError, run } = useAction();
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const [deliveriesVersion, setDeliveriesVersion] = useState(0);
  const urlError = fieldError(error, 'url');

  const adopt = useCallback((answer: Webhook | null) => {
    setWebhook(answer);
    setUrl(answer?.url ?? '');
    setFormat(answer?.format ?? 'json');
  }, []);

  useEffect(() => {
    api.get<{ webhook: Webhook | null }>(path).then((answer) => adopt(answer.webhook), setError);
  }, [path, adopt]);

  /** Saves the form's URL and format; with `rotateFor`, keeps that stored webhook as it is and rotates its secret only. */
  async function save(rotateFor?: Webhook) {
    const rotate = rotateFor !== undefined;
    // A failure goes to the caller: the form's submit keeps it as the form's error, a rotation's ConfirmButton shows it in its dialog.
    await run(async () => {
      setNotice(undefined);
      const body = rotate ? { url: rotateFor.url, format: rotateFor.format, rotate_secret: true } : { url, format };
      const answer = await api.send<WebhookSaved>('PUT', path, body);
      adopt(answer.webhook);
      if (answer.signing_secret !== null) setSecret(answer.signing_secret);
      setNotice(rotate ? 'A new signing secret replaced the old one.' : 'Webhook saved.');
    }, { throwsErrors: true });
  }

  async function sendTest() {
    await run(async () => {
      setNotice(undefined);
      const answer = await api.send<{ delivery_id: string }>('POST', `${path}/test`);
      setNotice(`Test alert queued (delivery ${answer.delivery_id}); its attempts appear in the delivery log below.`);
      setDeliveriesVersion((version) => version + 1);
    });
  }

  async function remove() {
    await api.send('DELETE', path);
    adopt(null);
    setSecret(undefined);
    setNotice('Webhook removed: alerts are no longer sent to it.');
  }

  return (
    <div class="card">
      <h2>Webhook</h2>
      <p class="hint">Each alert is POSTed to this URL, signed with the signing secret; failed deliveries are retried with backoff.</p>
      {webhook === undefined ? (error === undefined ? <p role="status">Loading…</p> : <FormError error={error} />) : (
        <>
          {webhook === null ? <p>No webhook is set.</p> : (
            <ul class="webhook-facts">
              <li>URL: <span class="mono">{webhook.url}</span></li>
              <li>Format: {webhook.format === 'slack' ? 'Slack' : 'JSON'}</li>
              <li>Signing secret: <span class="mono">{webhook.secret_hint}</span></li>
              <li>Last changed: {formatIst(webhook.updated_at)}</li>
            </ul>
          )}
          {secret === undefined ? null : (
            <div aria-live="polite">
              <SecretOnce label="Signing secret" secret={secret}
                warning="this is the only time the signing secret is shown. Receivers verify each alert's signature with it." />
              <div class="actions"><button type="button" class="secondary" onClick={() => setSecret(undefined)}>I have stored it</button></div>
            </div>
          )}
          {notice === undefined ? null : <p class="notice" role="status">{notice}</p>}
          {can('putWebhook') ? (
            <form class="inline-form" onSubmit={(event) => {
              event.preventDefault();
              save().catch(setError);
            }}>
              <Field id="webhook-url" label="URL" hint="https, on a public host" error={urlError}>
                <input id="webhook-url" type="url" required maxLength={2048} value={url} autoComplete="off"
                  aria-describedby={describedBy('webhook-url', { hint: true, error: urlError })}
                  onInput={(event) => setUrl(event.currentTarget.value)} />
              </Field>
              <Field id="webhook-format" label="Format">
                <select id="webhook-format" value={format} onChange={(event) => setFormat(event.currentTarget.value as Webhook['format'])}>
                  <option value="json">JSON (signed alert envelope)</option>
                  <option value="slack">Slack (incoming webhook)</option>
                </select>
              </Field>
              <FormError error={error} shownParams={['url']} />
              <div class="actions">
                <button type="submit" class="primary" disabled={busy} aria-busy={busy}>{webhook === null ? 'Set webhook' : 'Save webhook'}</button>
                {webhook === null ? null : (
                  <>
                    {can('testWebhook') ? <button type="button" class="secondary" disabled={busy} onClick={() => void sendTest()}>Send test</button> : null}
                    <ConfirmButton label="Rotate secret" title="Rotate the signing secret?" confirmLabel="Rotate secret" danger onConfirm={() => save(webhook)}>
                      <p>A new signing secret is made and shown once; <strong>the old one stops signing at once</strong>, so receivers must switch to the new one.</p>
                    </ConfirmButton>
                    {can('deleteWebhook') ? (
                      <ConfirmButton label="Remove webhook" title="Remove the webhook?" confirmLabel="Remove" danger onConfirm={remove}>
                        <p>Alerts stop being sent to {webhook.url}. They still appear on this page.</p>
                      </ConfirmButton>
                    ) : null}
                  </>
                )}
              </div>
            </form>
          ) : null}
        </>
      )}
      {can('listWebhookDeliveries') ? <DeliveryLog organisationId={props.organisationId} version={deliveriesVersion} /> : null}
    </div>
  );
}

/** The text of an attempt's outcome: the receiver's status code, or the class of failure. */
function attemptOutcome(attempt: DeliveryAttempt): string {
  const status = attempt.status_code === null ? '' : `HTTP ${attempt.status_code}`;
  if (attempt.error === null) return status === '' ? 'delivered' : `${status} · delivered`;
  const failure = attempt.error.replaceAll('_', ' ');
  return status === '' ? failure : `${status} · ${failure}`;
}

/** The webhook's delivery log, newest first: state, each attempt's status code or error, and the next retry; re-read while any is pending. */
function DeliveryLog(props: { organisationId: string; version: number }) {
  const path = `/admin/v1/organisations/${props.organisationId}/webhook/deliveries`;
  const [deliveries, setDeliveries] = useState<Delivery[] | undefined>(undefined);
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  const [refreshes, setRefreshes] = useState(0);

  const load = useCallback(async () => {
    try {
      const page = await api.get<CursorPage<Delivery>>(path);
      setDeliveries(page.data);
      setNextCursor(page.next_cursor);
      setError(undefined);
    } catch (caught) {
      setError(caught);
    }
  }, [path]);

  useEffect(() => {
    void load();
  }, [load, props.version, refreshes]);

  // While a delivery is pending its attempts change: read the log again shortly.
  const pending = deliveries?.some((delivery) => delivery.state === 'pending') === true;
  useEffect(() => {
    if (!pending) return undefined;
    const timer = setTimeout(() => setRefreshes((count) => count + 1), pendingRefreshMs);
    return () => clearTimeout(timer);
  }, [pending, deliveries]);

  async function more() {
    if (nextCursor === null) return;
    try {
      const page = await api.get<CursorPage<Delivery>>(path, { cursor: nextCursor });
      setDeliveries((current) => [...(current ?? []), ...page.data]);
      setNextCursor(page.next_cursor);
    } catch (caught) {
      setError(caught);
    }
  }

  return (
    <>
      <h3>Delivery log</h3>
      <FormError error={error} />
      {deliveries === undefined ? (error === undefined ? <p role="status">Loading…</p> : null) : (
        <>
          <Table
            caption="Alert deliveries, newest first"
            rows={deliveries}
            rowKey={(delivery) => delivery.id}
            empty="Nothing delivered yet."
            columns={[
              { header: 'Queued (IST)', cell: (delivery) => formatIst(delivery.created_at) },
              { header: 'Alert', cell: (delivery) => <>{alertKindText[delivery.alert_kind]}<div class="small">{delivery.channel}</div></> },
              { header: 'State', cell: (delivery) => <span class={`pill pill-${delivery.state}`}>{delivery.state}</span> },
              {
                header: 'Attempts', cell: (delivery) => delivery.attempts.length === 0 ? 'none yet' : (
                  <ol class="small attempts">
                    {delivery.attempts.map((attempt) => (
                      <li key={attempt.attempt}>{formatIst(attempt.attempted_at)}: {attemptOutcome(attempt)} ({attempt.duration_ms} ms)</li>
                    ))}
                  </ol>
                ),
              },
              { header: 'Next retry (IST)', cell: (delivery) => (delivery.next_attempt_at === null ? '—' : formatIst(delivery.next_attempt_at)) },
            ]}
          />
          <div class="actions">
            <button type="button" class="secondary" onClick={() => void load()}>Refresh</button>
            {nextCursor === null ? null : <button type="button" class="secondary" onClick={() => void more()}>Show older deliveries</button>}
          </div>
        </>
      )}
    </>
  );
}
