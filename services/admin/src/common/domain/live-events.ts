/**
 * What the dashboard's live connections are told about an organisation, besides what they poll:
 * an alert as soon as it is raised (budget or low balance).
 */
interface LiveEvent {
  type: 'alert';
  /** The alert as the API lists it (JSON view). */
  alert: unknown;
}

/** An in-process fan-out of live events per organisation (one admin process; each replica has its own). */
export interface LiveEvents {
  /** Tells every listener of the organisation; never throws (a failing listener is skipped). */
  publish(organisationId: string, event: LiveEvent): void;
  /** Listens to one organisation's events; returns the function that stops listening. */
  subscribe(organisationId: string, listener: (event: LiveEvent) => void): () => void;
}

/** A new, empty fan-out. */
export function createLiveEvents(): LiveEvents {
  const listeners = new Map<string, Set<(event: LiveEvent) => void>>();
  return {
    publish(organisationId, event) {
      for (const listener of listeners.get(organisationId) ?? []) {
        try {
          listener(event);
        } catch {
          // One broken connection must not keep the event from the others.
        }
      }
    },
    subscribe(organisationId, listener) {
      const set = listeners.get(organisationId) ?? new Set();
      set.add(listener);
      listeners.set(organisationId, set);
      return () => {
        set.delete(listener);
        if (set.size === 0) listeners.delete(organisationId);
      };
    },
  };
}
