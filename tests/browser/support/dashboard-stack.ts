/**
 * The whole gateway for the dashboard's browser tests: ledger, admin (serving the dashboard) and a
 * proxy as processes over a fresh PostgreSQL database (tests/support/e2e-gateway.ts), with short
 * live-update and alert poll intervals, a local webhook receiver, and helpers that act as the
 * platform token or as a signed-in person through the same HTTP API the dashboard calls.
 */
import type { APIRequestContext, APIResponse } from 'playwright-core';
import { startE2eGateway, type E2eGateway } from '../../support/e2e-gateway.ts';
import { startWebhookReceiver, type WebhookReceiver } from './webhook-receiver.ts';

/** A running gateway whose admin serves the dashboard. */
export interface DashboardStack {
  gateway: E2eGateway;
  /** The dashboard's origin, e.g. http://127.0.0.1:41234 (no trailing slash). */
  origin: string;
  webhook: WebhookReceiver;
  /** Every usage record of the organisation that the filters select, following next_cursor to the end. */
  allUsage(organisationId: string, filters?: Record<string, string>): Promise<Array<Record<string, any>>>;
  /** Stops the receiver and every service; rejects when a service exited other than cleanly. */
  close(): Promise<void>;
}

/** Starts the stack; the admin polls the ledger for live updates and alerts every 100 ms. `adminEnv` adds to the admin's environment (e.g. a payment provider). */
export async function startDashboardStack(serverUrl: string, adminEnv: Record<string, string> = {}): Promise<DashboardStack> {
  const webhook = await startWebhookReceiver();
  let gateway: E2eGateway;
  try {
    gateway = await startE2eGateway({
      serverUrl,
      adminEnv: { LIVE_POLL_MS: '100', ALERT_POLL_MS: '100', LOW_BALANCE_POLL_MS: '200', ALERT_RETRY_BASE_MS: '200', ...adminEnv },
    });
  } catch (error) {
    await webhook.close();
    throw error;
  }
  const origin = new URL(gateway.adminBase).origin;
  return {
    gateway, origin, webhook,
    async allUsage(organisationId, filters = {}) {
      const records: Array<Record<string, any>> = [];
      let cursor: string | undefined;
      do {
        const query = new URLSearchParams({ ...filters, limit: '100', ...(cursor ? { cursor } : {}) });
        const page = await gateway.admin('GET', `/organisations/${organisationId}/usage?${query}`);
        records.push(...(page.data as Array<Record<string, any>>));
        cursor = (page.next_cursor as string | null) ?? undefined;
      } while (cursor);
      return records;
    },
    async close() {
      await webhook.close();
      const codes = await gateway.close();
      if (codes.some((code) => code !== 0)) {
        throw new Error(`a service exited with ${JSON.stringify(codes)}\n${gateway.services.map((s) => `--- ${s.name}\n${s.output()}`).join('\n')}`);
      }
    },
  };
}

/**
 * Calls the admin API as the person signed in to a browser context (its session cookie), the way
 * the dashboard does: a state change carries the session's CSRF token and the dashboard's Origin.
 */
export async function asSignedInPerson(request: APIRequestContext, origin: string) {
  const session = await request.get(`${origin}/auth/session`);
  if (session.status() !== 200) throw new Error(`GET /auth/session -> ${session.status()}: ${await session.text()}`);
  const csrfToken = (await session.json() as { csrf_token: string }).csrf_token;
  return {
    /** GET of an /admin/v1 path with the session cookie. */
    get: (path: string): Promise<APIResponse> => request.get(`${origin}/admin/v1${path}`),
    /** A state-changing call of an /admin/v1 path with the session cookie, CSRF token and Origin. */
    send: (method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<APIResponse> => request.fetch(`${origin}/admin/v1${path}`, {
      method, headers: { 'x-csrf-token': csrfToken, origin }, ...(body === undefined ? {} : { data: body }),
    }),
  };
}
