/**
 * Shared by the example handlers: finds the topic in a step input, whether it is a workflow step input
 * (`{ task: { topic }, steps }`), a delegated query (`{ topic }`) or a bare string.
 */
declare function record(value: unknown): Record<string, unknown> | undefined;
export declare function topicOf(input: unknown): string;
/** The outputs of the steps this step needs (`input.steps`), or an empty object. */
export declare function stepOutputs(input: unknown): Record<string, unknown>;
export { record };
