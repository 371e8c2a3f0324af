import { V1PushNotificationSerializer } from "@a2a-js/sdk/server";
export class QuietPushSender {
    store;
    options;
    serializer = new V1PushNotificationSerializer();
    chains = new Map();
    constructor(store, options = {}) {
        this.store = store;
        this.options = options;
    }
    async send(streamResponse, context, task) {
        const payload = streamResponse.payload;
        const taskId = payload === undefined ? "" : payload.$case === "task" ? payload.value.id : payload.value.taskId;
        if (!taskId)
            return;
        const configs = await this.store.load(taskId, context);
        if (configs.length === 0)
            return;
        const { body, contentType } = this.serializer.serialize(streamResponse, task);
        const previous = this.chains.get(taskId) ?? Promise.resolve();
        const next = previous.then(() => Promise.all(configs.map((config) => this.post(config, body, contentType, taskId))).then(() => undefined));
        this.chains.set(taskId, next);
        await next.finally(() => {
            if (this.chains.get(taskId) === next)
                this.chains.delete(taskId);
        });
    }
    async post(config, body, contentType, taskId) {
        const headers = { "content-type": contentType };
        const auth = config.authentication;
        if (auth?.scheme && auth.credentials)
            headers.authorization = `${auth.scheme} ${auth.credentials}`;
        else if (config.token)
            headers["x-a2a-notification-token"] = config.token;
        try {
            const response = await fetch(config.url, { method: "POST", headers, body, signal: AbortSignal.timeout(this.options.timeoutMs ?? 2_000) });
            await response.body?.cancel();
            if (!response.ok)
                throw new Error(`push answered HTTP ${response.status}`);
        }
        catch (error) {
            this.options.onError?.(error, taskId);
        }
    }
}
//# sourceMappingURL=push-sender.js.map