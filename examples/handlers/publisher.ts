/**
 * Pretends to publish the draft from its needed steps and returns where it went. Publishing nowhere real keeps
 * the demo inside the perimeter; the URL is stable per task so a retried attempt "publishes" to the same place.
 */
import type { Handler } from "switchyard/harness";

const publisher: Handler = (work) => ({
  published: true,
  url: `https://example.com/posts/${encodeURIComponent(work.taskId)}`,
});

export default publisher;
