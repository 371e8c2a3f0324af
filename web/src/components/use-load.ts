/** Loads something for a page, with its error as a Problem, and a way to load it again. */
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { problemOf, type Problem } from "../api";

export interface Loaded<T> {
  data: T | undefined;
  problem: Problem | undefined;
  loading: boolean;
  reload: () => void;
}

export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [problem, setProblem] = useState<Problem | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const [round, setRound] = useState(0);
  const latest = useRef(load);
  latest.current = load;
  useEffect(() => {
    const abort = new AbortController();
    setLoading(true);
    latest
      .current(abort.signal)
      .then((value) => {
        if (abort.signal.aborted) return;
        setData(value);
        setProblem(undefined);
      })
      .catch((error: unknown) => {
        if (!abort.signal.aborted) setProblem(problemOf(error));
      })
      .finally(() => {
        if (!abort.signal.aborted) setLoading(false);
      });
    return () => abort.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, round]);
  const reload = useCallback(() => setRound((r) => r + 1), []);
  return { data, problem, loading, reload };
}

/** Runs an action (a button's), keeping its problem and whether it is running. */
export function useAction(): { busy: boolean; problem: Problem | undefined; run: (action: () => Promise<void>) => Promise<void> } {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Problem | undefined>(undefined);
  const run = useCallback(async (action: () => Promise<void>) => {
    setBusy(true);
    setProblem(undefined);
    try {
      await action();
    } catch (error) {
      setProblem(problemOf(error));
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, problem, run };
}
