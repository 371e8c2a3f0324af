/**
 * Bus authentication as a process holds it: signers for the identities it publishes as, and (coordinators only)
 * the verifier of its inbox. Built once per process from the configuration (src/runtime.ts).
 */
import type { Envelope } from "../codec.js";
import { EndpointKind, EnvelopeKind, TASK_STARTED_CONTENT_TYPE } from "../codec.js";
import { ErrorCode, SwitchyardError } from "../../errors.js";
import { GATEWAY_SENDER, derivePublisherKey, isSender, type BusSecret, type PublisherKey } from "./bus-keys.js";
import { computeMac, macEquals, signEnvelope, withoutAuthField } from "./envelope-mac.js";

/** Signs the envelopes one identity publishes to the coordinator inbox. */
export interface EnvelopeSigner {
  readonly sender: string;
  /** The bytes to publish: the envelope encoded and validated (MALFORMED_ENVELOPE / PAYLOAD_TOO_LARGE), then signed. */
  sign(envelope: Envelope): Uint8Array;
}

/**
 * Who an inbox envelope provably comes from. `starter`: an identity that may start tasks (the gateway), sending a
 * task start (src/tasks/start-envelope.ts) — never anything that touches a step.
 */
export type AuthenticatedSender = { kind: "queue"; endpoint: string } | { kind: "gateway"; agent: string } | StarterSender;
export type StarterSender = { kind: "starter"; identity: string };

export type InboxVerdict = { ok: true; sender: AuthenticatedSender } | { ok: false; reason: InboxRefusal; message: string };

/** Reasons an inbox envelope is refused before anything is read from the database (metric label values). */
export type InboxRefusal = "no_mac" | "unknown_key" | "bad_mac" | "source_mismatch";

export interface EnvelopeVerifier {
  /** `raw` are the bytes as read from the stream, `envelope` their decoding. */
  verify(raw: Uint8Array, envelope: Envelope): InboxVerdict;
}

export interface BusAuthOptions {
  /** Master secrets, the first current; required to verify, and to sign as any identity. */
  secrets?: readonly BusSecret[];
  /** Keys handed to this process for single identities (a standalone harness or gateway). */
  publisherKeys?: readonly PublisherKey[];
  maxPayloadBytes: number;
}

/** Derived keys are cached; a flood of made-up identities cannot grow the cache without bound. */
const MAX_CACHED_KEYS = 1024;

export class BusAuth {
  private readonly secrets: ReadonlyMap<string, BusSecret>;
  private readonly derived = new Map<string, Buffer>();

  constructor(private readonly options: BusAuthOptions) {
    this.secrets = new Map((options.secrets ?? []).map((s) => [s.kid, s]));
  }

  /** Whether this process can verify inbox envelopes (holds master secrets). */
  get canVerify(): boolean {
    return this.secrets.size > 0;
  }

  /** The key this process signs as `sender` with: derived from the current master secret, or handed over. */
  publisherKey(sender: string): PublisherKey {
    const current = this.options.secrets?.[0];
    if (current) return derivePublisherKey(current, sender);
    const handed = this.options.publisherKeys?.find((k) => k.sender === sender);
    if (handed) return handed;
    const have = (this.options.publisherKeys ?? []).map((k) => k.sender);
    throw new SwitchyardError(
      ErrorCode.Config,
      `no bus key to publish as ${sender}: set SWITCHYARD_BUS_KEY to the output of \`switchyard bus key --sender ${sender}\`` +
        (have.length > 0 ? ` (this process has a key for ${have.join(", ")})` : "") +
        " or SWITCHYARD_BUS_SECRET (coordinators)",
      { details: { path: "SWITCHYARD_BUS_KEY", sender } },
    );
  }

  /** Throws CONFIG at once when this process has no key for `sender`. */
  signer(sender: string): EnvelopeSigner {
    const key = this.publisherKey(sender);
    const { maxPayloadBytes } = this.options;
    return { sender, sign: (envelope) => signEnvelope(key, envelope, maxPayloadBytes) };
  }

  /**
   * A signer that looks its key up on first use: for parts every runtime builds but only some processes use (the
   * gateway identity's FOREIGN results). Processes that do use it check `publisherKey` at start-up.
   */
  lazySigner(sender: string): EnvelopeSigner {
    let signer: EnvelopeSigner | undefined;
    return { sender, sign: (envelope) => (signer ??= this.signer(sender)).sign(envelope) };
  }

  verifier(): EnvelopeVerifier {
    if (!this.canVerify) {
      throw new SwitchyardError(ErrorCode.Config, "SWITCHYARD_BUS_SECRET is not set: a coordinator cannot authenticate its inbox without it (README, Bus authentication)", {
        details: { path: "SWITCHYARD_BUS_SECRET" },
      });
    }
    return { verify: (raw, envelope) => this.verify(raw, envelope) };
  }

  private verify(raw: Uint8Array, envelope: Envelope): InboxVerdict {
    const auth = envelope.auth;
    if (!auth || auth.mac.byteLength === 0) return refuse("no_mac", "the envelope carries no bus MAC");
    const secret = this.secrets.get(auth.keyId);
    if (!secret) return refuse("unknown_key", `bus key id ${JSON.stringify(auth.keyId.slice(0, 40))} is not accepted here`);
    if (!isSender(auth.sender)) return refuse("bad_mac", `${JSON.stringify(auth.sender.slice(0, 140))} is not a publisher identity`);
    const split = withoutAuthField(raw);
    if (!split || split.authRecords !== 1) return refuse("bad_mac", "the envelope must carry exactly one auth field");
    const expected = computeMac(this.keyOf(secret, auth.sender), auth.keyId, auth.sender, split.unsigned);
    if (!macEquals(expected, auth.mac)) return refuse("bad_mac", `the bus MAC does not verify for ${auth.sender}`);
    // Authenticated. The identity decides what the envelope may claim to be.
    const foreign = envelope.source?.kind === EndpointKind.FOREIGN;
    if (auth.sender === GATEWAY_SENDER) {
      if (isTaskStart(envelope)) {
        if (envelope.source) return refuse("source_mismatch", "a task start names no source: it speaks for no agent or queue");
        return { ok: true, sender: { kind: "starter", identity: auth.sender } };
      }
      if (!foreign || !envelope.source?.id) return refuse("source_mismatch", "the gateway publishes only as a FOREIGN agent (its RESULTs and heartbeats) or task starts");
      return { ok: true, sender: { kind: "gateway", agent: envelope.source.id } };
    }
    if (foreign) return refuse("source_mismatch", `${auth.sender} claims a FOREIGN source: foreign results come only through the callback route or the sweep`);
    return { ok: true, sender: { kind: "queue", endpoint: auth.sender } };
  }

  private keyOf(secret: BusSecret, sender: string): Buffer {
    const cacheKey = `${secret.kid}\n${sender}`;
    let key = this.derived.get(cacheKey);
    if (!key) {
      key = derivePublisherKey(secret, sender).key;
      if (this.derived.size >= MAX_CACHED_KEYS) this.derived.clear();
      this.derived.set(cacheKey, key);
    }
    return key;
  }
}

/** A harness may claim one too: it passes here as its queue and is refused when mapped to an event (envelopes.ts). */
function isTaskStart(envelope: Envelope): boolean {
  return envelope.kind === EnvelopeKind.CONTROL && envelope.payload?.contentType === TASK_STARTED_CONTENT_TYPE;
}

function refuse(reason: InboxRefusal, message: string): InboxVerdict {
  return { ok: false, reason, message };
}
