/**
 * The ForeignTransport port: how a governed foreign hop reaches an agent outside the perimeter. Everything around
 * the call is shared and transport-blind — the bridge row written inside the hop's transaction (dispatcher.ts), the
 * post-commit sender with its claim, retries and per-(tenant, agent) breaker (sender.ts), the poller and the
 * reconciliation sweep (poller.ts, sweep.ts), the egress guard every byte goes through (each agent's channel,
 * agent-channels.ts), and the exactly-once resume (resume.ts → a RESULT on the coordinator's inbox).
 *
 * A transport only speaks its protocol:
 * - `describe` at `foreign register`: reach the agent and check it can serve the registration (A2A: the Agent Card,
 *   its skills and security requirements; MCP: the tool is listed);
 * - `send`: open the foreign work for one claimed bridge and say how its result will come back;
 * - `poll`: the foreign task's state now (A2A GetTask), for the poller and the sweep (MCP: nothing to ask — the sweep
 *   never claims a `call` bridge);
 * - `cancel`: best effort, for a hop whose step attempt timed out or was cancelled.
 *
 * Adapters: a2a/a2a-transport.ts and mcp/mcp-transport.ts; `ForeignTransports` picks one by the registry's protocol.
 */
import type { BridgeRecord } from "../store/bridges/bridge-store.js";
import type { ForeignObservation } from "./bridge-transition.js";
import type { PushTarget } from "./a2a/client.js";
import type { ForeignAgentRecord } from "./registry.js";

export type TransportKind = "a2a" | "mcp";

/** How a sent hop's result comes back. */
export type Delivery = "push" | "poll" | "call";

/** What `describe` found, for the register command's answer and the operator. */
export interface AgentDescription {
  /** e.g. the card's name, or the MCP server's name and the tool's. */
  summary: string;
  /** What the registration will use (A2A: "push" or "poll"; MCP: "call"). */
  delivery: Delivery;
  /** Anything the operator should know that does not stop the registration (e.g. polling because no push). */
  notes: string[];
}

export interface TransportSendRequest {
  agent: ForeignAgentRecord;
  bridge: BridgeRecord;
  /** The step attempt's due time (ms since epoch): nothing may wait past it unless `progress` moved it. */
  deadlineMs: number;
  /**
   * The step's timeout (ms): how far a sign of life moves the due time — to now + this, as a worker's heartbeat
   * does (decide.ts onHeartbeat). Undefined: `deadlineMs` is final.
   */
  stepTimeoutMs?: number;
  /** Our callback URL and the per-bridge secret, made on first use (only transports that take pushes ask). */
  push(): Promise<PushTarget>;
  /**
   * Set `mayHaveReached` as soon as any request may have reached the agent (never back to false): only a send that
   * failed with it false is reported `not-sent`, which the step's retries may re-send.
   */
  reach: { mayHaveReached: boolean };
  /**
   * For a call that IS the work (MCP): record, before the call is made, that it is under way (the bridge leaves
   * `pending_send` with this foreign id), so a sender that crashes mid-call never makes it again — the step's
   * timeout then decides, re-sending only to an agent registered idempotent. Resolves once the row is written.
   */
  started(foreignTaskId: string): Promise<void>;
  /**
   * A sign of life during a call that IS the work (MCP progress): the sender tells the coordinator (a heartbeat for
   * the step attempt, throttled; call-heartbeat.ts), which moves the step's due time to now + `stepTimeoutMs`; the
   * transport moves its own bound the same way. Cheap and never throws: call it on every notification.
   */
  progress?(): void;
  signal?: AbortSignal;
}

export interface TransportSendResult {
  foreignTaskId: string;
  /** What the bridge's `dialect` becomes: the A2A dialect spoken, or "mcp". */
  dialect: BridgeRecord["dialect"];
  delivery: Delivery;
  /**
   * What the answer already says about the task (A2A: the Task or Message SendMessage answered with; MCP: the tool's
   * result). Applied like a push right after the send is recorded, so a terminal answer resumes the step at once.
   */
  observation?: ForeignObservation;
}

export interface ForeignTransport {
  readonly kind: TransportKind;
  describe(agent: ForeignAgentRecord, signal?: AbortSignal): Promise<AgentDescription>;
  send(request: TransportSendRequest): Promise<TransportSendResult>;
  /** Undefined when this transport has nothing to ask (an MCP call has no task to look up). */
  poll(agent: ForeignAgentRecord, bridge: BridgeRecord, signal?: AbortSignal): Promise<ForeignObservation | undefined>;
  /** Whether a cancel request was sent. */
  cancel(agent: ForeignAgentRecord, bridge: BridgeRecord, signal?: AbortSignal): Promise<boolean>;
}

export function transportKindOf(agent: Pick<ForeignAgentRecord, "protocol">): TransportKind {
  return agent.protocol === "mcp" ? "mcp" : "a2a";
}

/** The transports of one process, by kind. */
export class ForeignTransports {
  private readonly byKind: ReadonlyMap<TransportKind, ForeignTransport>;

  constructor(transports: readonly ForeignTransport[]) {
    this.byKind = new Map(transports.map((t) => [t.kind, t]));
  }

  for(agent: Pick<ForeignAgentRecord, "protocol">): ForeignTransport {
    const kind = transportKindOf(agent);
    const transport = this.byKind.get(kind);
    if (!transport) throw new Error(`no ${kind} transport in this process`);
    return transport;
  }
}
