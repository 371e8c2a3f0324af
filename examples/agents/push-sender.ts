/**
 * Push notifications as the SDK's `DefaultPushNotificationSender` sends them — the v1.0 body
 * (`V1PushNotificationSerializer`, `application/a2a+json`), the client's token in `X-A2A-Notification-Token` (or its
 * `authentication` as `Authorization`), one push at a time per task so they arrive in order, a timeout, no retries —
 * minus its `console.info` of every push URL. That URL carries the receiver's signed token, which has no business
 * in a terminal; failures go to `onError` instead of the console.
 */
import type { StreamResponse, Task, TaskPushNotificationConfig } from "@a2a-js/sdk";
import { V1PushNotificationSerializer, type PushNotificationSender, type PushNotificationStore, type ServerCallContext } from "@a2a-js/sdk/server";

export interface QuietPushSenderOptions {
  /** Per push (ms). @defaultValue 2000 */
  timeoutMs?: number;
  /** Told about each push that failed (it is not retried: the receiver polls for what it missed). */
  onError?: (error: unknown, taskId: string) => void;
}

export class QuietPushSender implements PushNotificationSender {
  private readonly serializer = new V1PushNotificationSerializer();
  private readonly chains = new Map<string, Promise<void>>();

  constructor(
    private readonly store: PushNotificationStore,
    private readonly options: QuietPushSenderOptions = {},
  ) {}

  async send(streamResponse: StreamResponse, context: ServerCallContext, task?: Task): Promise<void> {
    const payload = streamResponse.payload;
    const taskId = payload === undefined ? "" : payload.$case === "task" ? payload.value.id : payload.value.taskId;
    if (!taskId) return;
    const configs = await this.store.load(taskId, context);
    if (configs.length === 0) return;
    const { body, contentType } = this.serializer.serialize(streamResponse, task);
    const previous = this.chains.get(taskId) ?? Promise.resolve();
    const next = previous.then(() => Promise.all(configs.map((config) => this.post(config, body, contentType, taskId))).then(() => undefined));
    this.chains.set(taskId, next);
    await next.finally(() => {
      if (this.chains.get(taskId) === next) this.chains.delete(taskId);
    });
  }

  private async post(config: TaskPushNotificationConfig, body: string, contentType: string, taskId: string): Promise<void> {
    const headers: Record<string, string> = { "content-type": contentType };
    const auth = config.authentication;
    if (auth?.scheme && auth.credentials) headers.authorization = `${auth.scheme} ${auth.credentials}`;
    else if (config.token) headers["x-a2a-notification-token"] = config.token;
    try {
      const response = await fetch(config.url, { method: "POST", headers, body, signal: AbortSignal.timeout(this.options.timeoutMs ?? 2_000) });
      await response.body?.cancel();
      if (!response.ok) throw new Error(`push answered HTTP ${response.status}`);
    } catch (error) {
      this.options.onError?.(error, taskId);
    }
  }
}
