import { describe, expect, it } from "vitest";
import { MicroBatcher } from "../../src/store/micro-batcher.js";

/** A run function that records its batches and answers when told to. */
function gatedRun<T>() {
  const batches: T[][] = [];
  const gates: Array<() => void> = [];
  return {
    batches,
    release: () => gates.shift()?.(),
    run: async (items: T[]) => {
      batches.push(items);
      await new Promise<void>((resolve) => gates.push(resolve));
      return items.map((item) => `done:${String(item)}`);
    },
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("MicroBatcher", () => {
  it("runs a lone item at once and batches what arrives while a batch runs", async () => {
    const gate = gatedRun<number>();
    const batcher = new MicroBatcher({ run: gate.run });
    const first = batcher.submit(1);
    await tick();
    expect(gate.batches).toEqual([[1]]);
    const rest = [2, 3, 4].map((n) => batcher.submit(n));
    await tick();
    expect(gate.batches).toEqual([[1]]);
    expect(batcher.waiting).toBe(3);
    gate.release();
    expect(await first).toBe("done:1");
    await tick();
    expect(gate.batches).toEqual([[1], [2, 3, 4]]);
    gate.release();
    expect(await Promise.all(rest)).toEqual(["done:2", "done:3", "done:4"]);
  });

  it("caps a batch at maxBatch and runs up to maxInFlight batches at once", async () => {
    const gate = gatedRun<number>();
    const batcher = new MicroBatcher({ run: gate.run, maxBatch: 2, maxInFlight: 2 });
    const all = [1, 2, 3, 4, 5].map((n) => batcher.submit(n));
    await tick();
    // Two start at once, one item each; the rest wait and leave in batches of two as slots free up.
    expect(gate.batches).toEqual([[1], [2]]);
    expect(batcher.waiting).toBe(3);
    gate.release();
    await tick();
    expect(gate.batches).toEqual([[1], [2], [3, 4]]);
    gate.release();
    await tick();
    expect(gate.batches).toEqual([[1], [2], [3, 4], [5]]);
    gate.release();
    gate.release();
    expect(await Promise.all(all)).toEqual(["done:1", "done:2", "done:3", "done:4", "done:5"]);
  });

  it("isolates a failing item: the batch is re-run item by item and only that caller fails", async () => {
    const seen: number[][] = [];
    const batcher = new MicroBatcher<number, number>({
      run: async (items) => {
        seen.push(items);
        if (items.includes(13)) throw new Error("unlucky");
        return items.map((n) => n * 10);
      },
    });
    const blocker = batcher.submit(0);
    const results = Promise.allSettled([1, 13, 2].map((n) => batcher.submit(n)));
    await blocker;
    const [one, thirteen, two] = await results;
    expect(one).toEqual({ status: "fulfilled", value: 10 });
    expect(two).toEqual({ status: "fulfilled", value: 20 });
    expect(thirteen).toMatchObject({ status: "rejected", reason: { message: "unlucky" } });
    expect(seen).toEqual([[0], [1, 13, 2], [1], [13], [2]]);
  });

  it("fails the whole batch without re-running it when isolate refuses the error", async () => {
    let runs = 0;
    const batcher = new MicroBatcher<number, number>({
      run: async () => {
        runs++;
        throw Object.assign(new Error("connection refused"), { code: "ECONNREFUSED" });
      },
      isolate: (error) => (error as { code?: string }).code !== "ECONNREFUSED",
    });
    const blocker = batcher.submit(0).catch(() => undefined);
    const results = await Promise.allSettled([1, 2, 3].map((n) => batcher.submit(n)));
    await blocker;
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected", "rejected"]);
    expect(runs).toBe(2);
  });

  it("refuses a run that answers the wrong number of outputs", async () => {
    const batcher = new MicroBatcher<number, number>({ run: async () => [], isolate: () => false });
    await expect(batcher.submit(1)).rejects.toMatchObject({ code: "INTERNAL" });
  });

  it("keeps going after a failed batch", async () => {
    let fail = true;
    const batcher = new MicroBatcher<number, number>({
      run: async (items) => {
        if (fail) {
          fail = false;
          throw new Error("once");
        }
        return items;
      },
    });
    await expect(batcher.submit(1)).rejects.toThrow("once");
    expect(await batcher.submit(2)).toBe(2);
  });
});
