/**
 * The step graph of a workflow: order, dependents, and the cycles validation reports.
 */
import type { StepDefinition, WorkflowDefinition } from "../domain.js";
import { invalidWorkflow } from "./problems.js";

/** Steps in an order that respects `needs`, ties kept in definition order. */
export function topologicalOrder(def: WorkflowDefinition): StepDefinition[] {
  const done = new Set<string>();
  const remaining = [...def.steps];
  const order: StepDefinition[] = [];
  while (remaining.length > 0) {
    const next = remaining.findIndex((s) => s.needs.every((n) => done.has(n)));
    if (next < 0) {
      const stuck = remaining.map((s) => s.id).join(", ");
      throw invalidWorkflow([{ path: "steps", reason: `the needs of ${stuck} can never be satisfied` }]);
    }
    const [step] = remaining.splice(next, 1);
    done.add(step!.id);
    order.push(step!);
  }
  return order;
}

/** Ids of the steps that directly need `stepId`, in definition order. */
export function dependents(def: WorkflowDefinition, stepId: string): string[] {
  return def.steps.filter((s) => s.needs.includes(stepId)).map((s) => s.id);
}

/**
 * One cycle per strongly connected part of the needs graph, each the shortest loop through that part's
 * first-listed step, written `[a, b, a]` where a needs b. Self-needs are reported elsewhere.
 */
export function findDependencyCycles(steps: StepDefinition[]): string[][] {
  const needsOf = new Map(steps.map((s) => [s.id, s.needs.filter((n) => n !== s.id)]));
  const neededBy = new Map<string, string[]>(steps.map((s) => [s.id, []]));
  for (const [id, needs] of needsOf) for (const n of needs) neededBy.get(n)?.push(id);
  const covered = new Set<string>();
  const cycles: string[][] = [];
  for (const { id: start } of steps) {
    if (covered.has(start)) continue;
    const forward = breadthFirst(start, needsOf);
    if (!forward.has(start)) continue;
    const cycle = [start];
    for (let at = forward.get(start)!; at !== start; at = forward.get(at)!) cycle.unshift(at);
    cycles.push([start, ...cycle]);
    // Everything on some loop through `start` belongs to the same knot; one report for it is enough.
    const backward = breadthFirst(start, neededBy);
    for (const id of forward.keys()) if (backward.has(id)) covered.add(id);
  }
  return cycles;
}

/** Breadth-first reach from `start`: each reached node → the node it was first reached from. */
function breadthFirst(start: string, edges: Map<string, string[]>): Map<string, string> {
  const parent = new Map<string, string>();
  const queue = [start];
  for (let k = 0; k < queue.length; k++) {
    for (const next of edges.get(queue[k]!) ?? []) {
      if (parent.has(next)) continue;
      parent.set(next, queue[k]!);
      if (next !== start) queue.push(next);
    }
  }
  return parent;
}
