/**
 * Push notifications as the SDK's `DefaultPushNotificationSender` sends them — the v1.0 body
 * (`V1PushNotificationSerializer`, `application/a2a+json`), the client's token in `X-A2A-Notification-Token` (or its
 * `authentication` as `Authorization`), one push at a time per task so they arrive in order, a timeout, no retries —
 * minus its `console.info` of every push URL. That URL carries the receiver's signed token, which has no business
 * in a terminal; failures go to `onError` instead of the console.
 */
import type { StreamResponse, Task } from "@a2a-js/sdk";
import { type PushNotificationSender, type PushNotificationStore, type ServerCallContext } from "@a2a-js/sdk/server";
export interface QuietPushSenderOptions {
    /** Per push (ms). @defaultValue 2000 */
    timeoutMs?: number;
    /** Told about each push that failed (it is not retried: the receiver polls for what it missed). */
    onError?: (error: unknown, taskId: string) => void;
}
export declare class QuietPushSender implements PushNotificationSender {
    private readonly store;
    private readonly options;
    private readonly serializer;
    private readonly chains;
    constructor(store: PushNotificationStore, options?: QuietPushSenderOptions);
    send(streamResponse: StreamResponse, context: ServerCallContext, task?: Task): Promise<void>;
    private post;
}
