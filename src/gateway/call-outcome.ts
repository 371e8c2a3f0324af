/**
 * How an interceptor sees a call's end, unary or streaming alike: a streaming call fails (or ends well) while its
 * messages are read, long after `next` returned, so each interceptor that cares about failures would otherwise
 * wrap the message iterator itself.
 */
import type { Interceptor } from "@connectrpc/connect";

type Next = Parameters<Interceptor>[0];
type Request = Parameters<Next>[0];

export interface CallOutcome {
  /** What the call threw, at once or while streaming; the interceptor throws what this returns instead. */
  failed(error: unknown): unknown;
  /** The call ended well (a unary response, or the last streamed message read). */
  ended?(): void;
}

export async function watchCall(next: Next, req: Request, outcome: CallOutcome): ReturnType<Next> {
  let res;
  try {
    res = await next(req);
  } catch (error) {
    throw outcome.failed(error);
  }
  if (!res.stream) {
    outcome.ended?.();
    return res;
  }
  const messages = res.message;
  return {
    ...res,
    message: (async function* () {
      try {
        yield* messages;
        outcome.ended?.();
      } catch (error) {
        throw outcome.failed(error);
      }
    })(),
  };
}
