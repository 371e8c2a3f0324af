/**
 * Shared by the example handlers: finds the topic in a step input, whether it is a workflow step input
 * (`{ task: { topic }, steps }`), a delegated query (`{ topic }`) or a bare string.
 */
function record(value) {
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value : undefined;
}
export function topicOf(input) {
    if (typeof input === "string" && input !== "")
        return input;
    const outer = record(input);
    const direct = outer?.topic;
    if (typeof direct === "string" && direct !== "")
        return direct;
    const task = outer?.task;
    if (typeof task === "string" && task !== "")
        return task;
    const nested = record(task)?.topic;
    if (typeof nested === "string" && nested !== "")
        return nested;
    return "an unnamed topic";
}
/** The outputs of the steps this step needs (`input.steps`), or an empty object. */
export function stepOutputs(input) {
    return record(record(input)?.steps) ?? {};
}
export { record };
//# sourceMappingURL=topic.js.map