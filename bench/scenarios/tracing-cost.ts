/**
 * What tracing costs the coordinator (issue 12 §3): scenario (b)'s governed hops, the same system, rounds alternating
 * tracing OFF and ON in one run. ON is the real SDK (NodeTracerProvider + BatchSpanProcessor, as `startTracing`
 * builds it) with an exporter that drops the batches, so the figure is our spans and the SDK's work, not a
 * collector's network. OFF is the default: nothing registered, `tracingOn()` false.
 *
 * `tracing_on_ratio` = hops/s with tracing on ÷ hops/s with it off (medians). Opt-in: `--only tracing-cost`.
 */
import { context, propagation, trace } from "@opentelemetry/api";
import { BatchSpanProcessor, NodeTracerProvider, type ReadableSpan, type SpanExporter } from "@opentelemetry/sdk-trace-node";
import { ErrorCode, SwitchyardError } from "../../src/errors.js";
import { useTracerProvider } from "../../src/telemetry/tracing.js";
import { perSecond, summarize, type Measurement, type Scenario } from "../support.js";
import { round } from "./governed-hops.js";
import { createBenchSystem } from "./system.js";

const SIZES = {
  full: { warmup: 3_000, results: 6_000, pairs: 3 },
  quick: { warmup: 1_000, results: 2_000, pairs: 1 },
};

/** Counts what it is given and drops it: the SDK's batching and serialisation-free path, no network. */
class DroppingExporter implements SpanExporter {
  spans = 0;
  export(spans: ReadableSpan[], done: (result: { code: 0 }) => void): void {
    this.spans += spans.length;
    done({ code: 0 });
  }
  async shutdown(): Promise<void> {}
}

export const tracingCostScenario: Scenario = {
  name: "tracing-cost",
  description: "governed hops with tracing off vs on (SDK, dropping exporter), alternating rounds in one run",
  budgetMs: { full: 180_000, quick: 60_000 },
  optIn: true,
  async run(ctx): Promise<Measurement[]> {
    const size = ctx.quick ? SIZES.quick : SIZES.full;
    const system = await ctx.phase("set up scratch database + runtime", () => createBenchSystem(ctx));
    const exporter = new DroppingExporter();
    const provider = new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter, { maxQueueSize: 65_536, maxExportBatchSize: 4_096 })] });
    provider.register();
    ctx.defer(async () => {
      useTracerProvider(undefined);
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    });
    await round(ctx, system, "warm-up (off)", size.warmup);
    useTracerProvider(provider);
    await round(ctx, system, "warm-up (on)", size.warmup);
    useTracerProvider(undefined);
    const off: number[] = [];
    const on: number[] = [];
    // Node CPU per hop (µs) moves far less with the machine's load than hops/s does: the steadier comparison.
    const offCpu: number[] = [];
    const onCpu: number[] = [];
    for (let pair = 1; pair <= size.pairs && !ctx.signal.aborted; pair++) {
      // Alternating, so drift of the shared machine (or of the database as it grows) hits both sides alike.
      for (const traced of pair % 2 === 1 ? [false, true] : [true, false]) {
        useTracerProvider(traced ? provider : undefined);
        const result = await round(ctx, system, `pair ${pair}/${size.pairs} tracing ${traced ? "on" : "off"}`, size.results);
        const rate = perSecond(result.auditRows, result.drainMs);
        (traced ? on : off).push(rate);
        if (typeof result.cpu.node_us === "number") (traced ? onCpu : offCpu).push(result.cpu.node_us);
        ctx.log(`pair ${pair}, tracing ${traced ? "on " : "off"}: ${Math.round(rate)} hops/s, ${result.cpu.node_us} µs Node CPU per hop`);
      }
      useTracerProvider(undefined);
    }
    if (off.length === 0 || on.length === 0) throw new SwitchyardError(ErrorCode.Timeout, "no measured pair ran within the budget");
    await provider.forceFlush();
    const offRate = summarize(off).p50;
    const onRate = summarize(on).p50;
    return [
      { name: "tracing_off_hops_per_s", value: offRate, unit: "hops/s", extra: { runs: off.map(Math.round), results_per_run: size.results } },
      { name: "tracing_on_hops_per_s", value: onRate, unit: "hops/s", extra: { runs: on.map(Math.round), spans_exported: exporter.spans } },
      {
        name: "tracing_on_ratio",
        value: onRate / offRate,
        unit: "ratio",
        extra: {
          node_cpu_us_per_hop_off: offCpu.length > 0 ? summarize(offCpu).p50 : null,
          node_cpu_us_per_hop_on: onCpu.length > 0 ? summarize(onCpu).p50 : null,
          partial: ctx.signal.aborted,
        },
      },
    ];
  },
};
