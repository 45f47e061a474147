// Live updates of one organisation over a WebSocket (/admin/v1/live), shared by every component
// that listens to the same organisation, reconnecting with exponential backoff and jitter.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Alert, Balance, UsageRecord } from './api-types.ts';

/** A message the admin pushes. */
export type LiveMessage =
  | { type: 'balance'; balance: Balance }
  | { type: 'usage'; records: UsageRecord[] }
  | { type: 'alert'; alert: Alert };

/** The connection's state, for the status indicator. */
export type LiveStatus = 'connecting' | 'live' | 'reconnecting' | 'off';

/** First and largest wait before reconnecting, ms. */
const backoffBaseMs = 1_000;
const backoffMaxMs = 30_000;

/** The wait before reconnect attempt `attempt` (0-based): exponential, capped, with half of it random so tabs do not reconnect in step. */
function backoffMs(attempt: number): number {
  const ceiling = Math.min(backoffMaxMs, backoffBaseMs * 2 ** attempt);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** One organisation's socket and everyone listening to it. */
class LiveChannel {
  readonly listeners = new Set<(message: LiveMessage) => void>();
  readonly statusListeners = new Set<(status: LiveStatus) => void>();
  status: LiveStatus = 'connecting';
  private socket: WebSocket | undefined;
  private attempt = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
  private readonly organisationId: string;

  constructor(organisationId: string) {
    this.organisationId = organisationId;
    this.connect();
  }

  private setStatus(status: LiveStatus): void {
    this.status = status;
    for (const listener of this.statusListeners) listener(status);
  }

  private connect(): void {
    const scheme = window.location.protocol === 'https:' ? 'wss' : 'ws';
    const url = `${scheme}://${window.location.host}/admin/v1/live?organisation_id=${encodeURIComponent(this.organisationId)}`;
    const socket = new WebSocket(url);
    this.socket = socket;
    socket.addEventListener('open', () => {
      this.attempt = 0;
      this.setStatus('live');
    });
    socket.addEventListener('message', (event: MessageEvent) => {
      let message: LiveMessage;
      try {
        message = JSON.parse(String(event.data)) as LiveMessage;
      } catch {
        return; // not JSON: nothing the dashboard understands
      }
      for (const listener of this.listeners) listener(message);
    });
    socket.addEventListener('close', () => {
      if (this.closed) return;
      this.setStatus('reconnecting');
      this.timer = setTimeout(() => this.connect(), backoffMs(this.attempt));
      this.attempt += 1;
    });
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.socket?.close();
  }
}

const channels = new Map<string, LiveChannel>();

/** Stops listening; the socket closes once nobody listens to its organisation. */
function release(organisationId: string, channel: LiveChannel): void {
  if (channel.listeners.size > 0 || channel.statusListeners.size > 0) return;
  channel.close();
  if (channels.get(organisationId) === channel) channels.delete(organisationId);
}

/**
 * Listens to the organisation's live updates while the component is mounted (none when
 * `organisationId` is undefined); returns the connection's status. `onMessage` may change between
 * renders without reconnecting.
 */
export function useLive(organisationId: string | undefined, onMessage: (message: LiveMessage) => void): LiveStatus {
  const handler = useRef(onMessage);
  handler.current = onMessage;
  const [status, setStatus] = useState<LiveStatus>('off');

  useEffect(() => {
    if (organisationId === undefined) {
      setStatus('off');
      return undefined;
    }
    let channel = channels.get(organisationId);
    if (channel === undefined) {
      channel = new LiveChannel(organisationId);
      channels.set(organisationId, channel);
    }
    const listener = (message: LiveMessage) => handler.current(message);
    channel.listeners.add(listener);
    channel.statusListeners.add(setStatus);
    setStatus(channel.status);
    const current = channel;
    return () => {
      current.listeners.delete(listener);
      current.statusListeners.delete(setStatus);
      release(organisationId, current);
    };
  }, [organisationId]);

  return status;
}
