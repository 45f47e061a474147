import type { Balance, UsageRecord } from '../../common/domain/admin-records.ts';
import type { LedgerPort } from '../../common/domain/ledger-port.ts';

/** What a watcher of an organisation is told by the poll loop: its balance or its newest usage changed. */
export type LiveLedgerMessage =
  | { type: 'balance'; balance: Balance }
  | { type: 'usage'; records: UsageRecord[] };

/** Recent usage records each poll reads (and a usage message carries), newest first. */
const recentUsageCount = 20;

/** What the watches need. */
export interface OrganisationWatchesDeps {
  ledger: Pick<LedgerPort, 'getBalance' | 'listUsage'>;
  /** Time between the end of one poll of an organisation and the start of the next, ms. */
  pollMs: number;
  /** Told when a poll fails (the loop goes on): for the log. */
  onPollError(organisationId: string, error: unknown): void;
}

/** The organisations being watched, one poll loop each, shared by all of its watchers. */
export interface OrganisationWatches {
  /**
   * Starts telling `listener` about the organisation: at once what is already known (the last
   * balance and usage read), then every change. Returns the function that stops; the loop stops
   * when its last watcher does.
   */
  watch(organisationId: string, listener: (message: LiveLedgerMessage) => void): () => void;
  /** The organisations with a running loop (tests, metrics). */
  watchedOrganisations(): string[];
  /** Stops every loop; listeners hear nothing more. */
  close(): void;
}

/** One organisation's loop: its watchers, what they were last told, and the pending poll timer. */
interface Watch {
  listeners: Set<(message: LiveLedgerMessage) => void>;
  balance: LiveLedgerMessage | undefined;
  usage: LiveLedgerMessage | undefined;
  timer: NodeJS.Timeout | undefined;
  stopped: boolean;
}

/** Whether two balances differ in any amount. */
function balanceChanged(before: Balance, after: Balance): boolean {
  return before.creditedMicros !== after.creditedMicros || before.availableMicros !== after.availableMicros
    || before.heldMicros !== after.heldMicros || before.debitedMicros !== after.debitedMicros;
}

/**
 * Per-organisation poll loops over the ledger (GetBalance and the newest usage page) for the
 * dashboard's live connections: a balance message when an amount changed, a usage message when
 * the newest record changed. One loop per organisation however many watch it, so N open tabs
 * cost the ledger what one does; polls never overlap (the next is timed from the end of the last).
 */
export function createOrganisationWatches({ ledger, pollMs, onPollError }: OrganisationWatchesDeps): OrganisationWatches {
  const watches = new Map<string, Watch>();

  function tell(watch: Watch, message: LiveLedgerMessage): void {
    for (const listener of watch.listeners) {
      try {
        listener(message);
      } catch {
        // One broken connection must not keep the message from the others.
      }
    }
  }

  async function poll(organisationId: string, watch: Watch): Promise<void> {
    try {
      const [balance, usage] = await Promise.all([
        ledger.getBalance(organisationId),
        ledger.listUsage({ organisationId, pageSize: recentUsageCount }),
      ]);
      if (watch.stopped) return;
      const lastBalance = watch.balance?.type === 'balance' ? watch.balance.balance : undefined;
      if (lastBalance === undefined || balanceChanged(lastBalance, balance)) {
        watch.balance = { type: 'balance', balance };
        tell(watch, watch.balance);
      }
      const lastRecords = watch.usage?.type === 'usage' ? watch.usage.records : undefined;
      if (lastRecords === undefined || lastRecords[0]?.id !== usage.records[0]?.id) {
        watch.usage = { type: 'usage', records: usage.records };
        tell(watch, watch.usage);
      }
    } catch (error) {
      if (!watch.stopped) onPollError(organisationId, error);
    } finally {
      if (!watch.stopped) watch.timer = setTimeout(() => { void poll(organisationId, watch); }, pollMs);
    }
  }

  function stop(organisationId: string, watch: Watch): void {
    watch.stopped = true;
    clearTimeout(watch.timer);
    watch.listeners.clear();
    if (watches.get(organisationId) === watch) watches.delete(organisationId);
  }

  return {
    watch(organisationId, listener) {
      let watch = watches.get(organisationId);
      if (watch === undefined) {
        watch = { listeners: new Set(), balance: undefined, usage: undefined, timer: undefined, stopped: false };
        watches.set(organisationId, watch);
        watch.listeners.add(listener);
        // The first poll runs now: a new watcher is told the state as soon as it is read.
        void poll(organisationId, watch);
      } else {
        watch.listeners.add(listener);
        if (watch.balance !== undefined) listener(watch.balance);
        if (watch.usage !== undefined) listener(watch.usage);
      }
      const current = watch;
      return () => {
        current.listeners.delete(listener);
        if (current.listeners.size === 0 && !current.stopped) stop(organisationId, current);
      };
    },
    watchedOrganisations: () => [...watches.keys()],
    close() {
      for (const [organisationId, watch] of [...watches]) stop(organisationId, watch);
    },
  };
}
