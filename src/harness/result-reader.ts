/**
 * The result-reader port: how a resumed turn pulls a delegate's stored output. A REPLY carries only a reference
 * (`step:<taskId>/<stepId>`), never the output itself, so the origin reads it through its own tenant scope.
 */

export interface ResultReader {
  /**
   * Returns the stored output the reference names, read as tenant `orgId`. Throws NOT_FOUND when the reference
   * does not name a completed step of that tenant (including when it belongs to another tenant).
   */
  read(orgId: string, ref: string): Promise<unknown>;
}

export interface StepResultRef {
  taskId: string;
  stepId: string;
}

const REF_PREFIX = "step:";

export function formatStepResultRef(ref: StepResultRef): string {
  return `${REF_PREFIX}${ref.taskId}/${ref.stepId}`;
}

/**
 * Parses `step:<taskId>/<stepId>`; returns undefined for anything else. The task id never contains `/`, so the
 * first `/` splits; a step id may contain further slashes (delegation step ids are derived from their origin).
 */
export function parseStepResultRef(ref: string): StepResultRef | undefined {
  if (!ref.startsWith(REF_PREFIX)) return undefined;
  const rest = ref.slice(REF_PREFIX.length);
  const slash = rest.indexOf("/");
  if (slash <= 0 || slash === rest.length - 1) return undefined;
  return { taskId: rest.slice(0, slash), stepId: rest.slice(slash + 1) };
}
