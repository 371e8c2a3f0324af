/**
 * What a delivery is, read from its headers and (verified, or generic) body: its event name, the provider's
 * delivery id (the idempotency key) and whether it carries anything to do. Pure.
 *
 * | source  | event                                   | delivery id                                   |
 * | github  | `X-GitHub-Event`                        | `X-GitHub-Delivery`                           |
 * | gitea   | `X-Gitea-Event`                         | `X-Gitea-Delivery`                            |
 * | slack   | body `event.type`, else body `type`     | body `event_id` (none for url_verification)   |
 * | cairn   | body `type`                             | `webhook-id`                                  |
 * | generic | `X-Event` header if present, else `generic` | `Idempotency-Key` or `X-Delivery-Id`, else none |
 */
import type { IngestSource } from "./endpoint-store.js";
import type { SignedDelivery } from "./verify/types.js";
import { header } from "./verify/types.js";

export interface DeliveryFacts {
  event: string;
  /** The provider's id for this delivery: a redelivery carries the same one. Undefined: none (generic without a header). */
  deliveryId: string | undefined;
  /** Set when the delivery carries nothing to start a task for (GitHub `ping`, Slack `app_rate_limited`). */
  ignore?: string;
  /** Slack `url_verification`: answer with this challenge, start nothing. */
  challenge?: string;
}

/** Ids longer than this, or with characters outside printable ASCII, are not ids (and would bloat the key). */
const DELIVERY_ID = /^[\x21-\x7e]{1,200}$/;
const EVENT = /^[A-Za-z0-9_.:-]{1,100}$/;

export function deliveryFacts(source: IngestSource, delivery: Pick<SignedDelivery, "headers">, body: unknown): DeliveryFacts | { malformed: string } {
  const obj = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  const h = (name: string) => header(delivery as SignedDelivery, name);
  let event: string | undefined;
  let deliveryId: string | undefined;
  switch (source) {
    case "github":
      event = h("x-github-event");
      deliveryId = h("x-github-delivery");
      if (event === "ping") return { event, deliveryId, ignore: "ping" };
      break;
    case "gitea":
      event = h("x-gitea-event");
      deliveryId = h("x-gitea-delivery");
      break;
    case "slack": {
      if (obj.type === "url_verification") {
        return typeof obj.challenge === "string" ? { event: "url_verification", deliveryId: undefined, challenge: obj.challenge } : { malformed: "url_verification without a challenge" };
      }
      const inner = obj.event as Record<string, unknown> | undefined;
      event = typeof inner?.type === "string" ? inner.type : typeof obj.type === "string" ? obj.type : undefined;
      deliveryId = typeof obj.event_id === "string" ? obj.event_id : undefined;
      if (obj.type !== "event_callback") return event && EVENT.test(event) ? { event, deliveryId: undefined, ignore: String(obj.type) } : { malformed: "no event type" };
      break;
    }
    case "cairn":
      event = typeof obj.type === "string" ? obj.type : undefined;
      deliveryId = h("webhook-id");
      break;
    case "generic":
      event = h("x-event") ?? "generic";
      if (!EVENT.test(event)) event = "generic";
      deliveryId = h("idempotency-key") ?? h("x-delivery-id");
      if (deliveryId !== undefined && !DELIVERY_ID.test(deliveryId)) return { malformed: "Idempotency-Key / X-Delivery-Id must be 1 to 200 printable ASCII characters" };
      return { event, deliveryId };
  }
  if (!event || !EVENT.test(event)) return { malformed: `the ${source} event name is missing or not a name` };
  if (deliveryId === undefined || !DELIVERY_ID.test(deliveryId)) return { malformed: `the ${source} delivery id is missing or not 1 to 200 printable ASCII characters` };
  return { event, deliveryId };
}
