/**
 * Answers the conversation a task came from. The task was started by a verified webhook, so it carries a reply
 * address (`work.replyTo`); the handler writes only the words: where they go and with which credential is decided
 * by the delivery and the tenant's connection, never here.
 */
import type { Handler } from "switchyard/harness";

interface IngestInput {
  source?: string;
  event?: string;
  body?: { comment?: { body?: unknown; user?: { login?: unknown } }; sender?: { login?: unknown } };
}

const responder: Handler = async (work, ctx) => {
  const input = (work.input as { task?: IngestInput }).task ?? {};
  const who = input.body?.sender?.login ?? input.body?.comment?.user?.login ?? "there";
  const asked = typeof input.body?.comment?.body === "string" ? input.body.comment.body : "your request";
  if (!work.replyTo) return { replied: false, why: "this task came without a reply address" };
  const text = `Hi @${String(who)}, Switchyard looked at "${asked.slice(0, 200)}". Triage done: nothing blocking found.`;
  // The idempotency key makes a retried turn post nothing new: the first outcome comes back instead.
  const outcome = await ctx.reply(text, { idempotencyKey: `${work.taskId}:answer` });
  ctx.usage({ cost: 0.5 });
  return { replied: outcome.status === "sent", outcome };
};

export default responder;
