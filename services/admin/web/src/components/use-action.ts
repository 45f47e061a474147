import { useCallback, useState } from 'preact/hooks';

/** How `run` ends an action (both off by default). */
interface ActionOptions {
  /**
   * Success closes the form (a dialog that calls `onDone`): stay busy, so its buttons stay off
   * until it is gone rather than flashing back on; a failure still ends the busy state.
   */
  staysBusyOnSuccess?: boolean;
  /** The caller shows the failure itself (a ConfirmButton shows it in its dialog): throw it on instead of keeping it as `error`. */
  throwsErrors?: boolean;
}

/** What `useAction` gives a form: whether its action runs, its last failure, and `run` to start one. */
interface Action {
  busy: boolean;
  /** The last failure (an ApiError or Error, shown by FormError), or undefined. */
  error: unknown;
  /** Sets the failure directly: a check made before sending, or a failed initial read. */
  setError(error: unknown): void;
  /** Clears the error, marks the form busy, runs `work`, keeps what it throws as `error` and ends busy (see ActionOptions). */
  run(work: () => Promise<void>, options?: ActionOptions): Promise<void>;
}

/** A form's busy and error state around the one action it sends at a time (submit, confirm, send test). */
export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setErrorState] = useState<unknown>(undefined);
  // Through a function so an error is never taken for a state updater.
  const setError = useCallback((next: unknown) => setErrorState(() => next), []);

  const run = useCallback(async (work: () => Promise<void>, options: ActionOptions = {}) => {
    setBusy(true);
    setErrorState(undefined);
    try {
      await work();
      if (options.staysBusyOnSuccess !== true) setBusy(false);
    } catch (caught) {
      setBusy(false);
      if (options.throwsErrors === true) throw caught;
      setErrorState(() => caught);
    }
  }, []);

  return { busy, error, setError, run };
}
