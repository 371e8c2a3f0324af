/**
 * Returns its input unchanged and reports a small cost. The simplest possible worker; used by tests and benches.
 */
import type { Handler } from "switchyard/harness";

const echo: Handler = (work, ctx) => {
  ctx.usage({ cost: 0.1 });
  return work.input;
};

export default echo;
