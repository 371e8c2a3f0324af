/** Waits `ms`, or less when `signal` aborts first; never rejects. `unref`: the timer alone keeps no process alive. */
export function sleep(ms: number, signal?: AbortSignal, options: { unref?: boolean } = {}): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    if (options.unref) timer.unref?.();
    signal?.addEventListener("abort", done, { once: true });
  });
}
