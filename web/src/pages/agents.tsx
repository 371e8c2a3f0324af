/**
 * Foreign agents: the tenant's registry, one card per agent with what the registration says (protocol, delivery,
 * skills, egress host, clearance, cost), its circuit breaker and its recent bridges.
 */
import { ForeignDelivery, ForeignProtocol } from "../../../src/gen/switchyard/api/v1/foreign_pb.js";
import { ProblemBox } from "../components/problem";
import { useLoad } from "../components/use-load";
import { useConsole } from "../context";
import { formatCost, formatTime } from "../format";
import { AgentStatus } from "./agent-status";

const PROTOCOLS: Record<number, string> = {
  [ForeignProtocol.AUTO]: "A2A (from the card)",
  [ForeignProtocol.V1_0]: "A2A v1.0",
  [ForeignProtocol.V0_3]: "A2A v0.3",
  [ForeignProtocol.MCP]: "MCP tool",
};
const DELIVERIES: Record<number, string> = { [ForeignDelivery.AUTO]: "push, else poll", [ForeignDelivery.PUSH]: "push", [ForeignDelivery.POLL]: "poll" };

export function AgentsPage() {
  const { api, tenant } = useConsole();
  const list = useLoad((signal) => api.foreignAgents.list({}, { signal }), [api, tenant]);
  const agents = list.data?.agents ?? [];
  return (
    <section>
      <h1>Foreign agents</h1>
      <ProblemBox problem={list.problem} />
      {!list.loading && agents.length === 0 && <p class="hint">No foreign agents are registered for this tenant.</p>}
      <div class="cards wide">
        {agents.map((a) => (
          <article class="card" data-agent={a.agentKey}>
            <h2>
              foreign:{a.agentKey} <span class={a.enabled ? "flag-on" : "flag-off"}>{a.enabled ? "● enabled" : "○ disabled"}</span>
            </h2>
            <dl class="facts">
              <dt>URL</dt>
              <dd>
                <code>{a.baseUrl}</code>
              </dd>
              <dt>Protocol</dt>
              <dd>
                {PROTOCOLS[a.protocol] ?? "A2A"}
                {a.tool ? ` (tool ${a.tool})` : ""}
              </dd>
              <dt>Delivery</dt>
              <dd>{DELIVERIES[a.delivery] ?? "push, else poll"}</dd>
              <dt>Skills</dt>
              <dd>{a.skills.join(", ") || "—"}</dd>
              <dt>Egress to</dt>
              <dd>{a.allowHost}</dd>
              <dt>Clearance ceiling</dt>
              <dd>{a.clearanceCeiling}</dd>
              <dt>Cost per hop</dt>
              <dd>{formatCost(a.costEstimate)}</dd>
              <dt>Re-sent on failure</dt>
              <dd>{a.idempotent ? "yes (idempotent)" : "no"}</dd>
              <dt>Updated</dt>
              <dd>{formatTime(a.updatedAt)}</dd>
            </dl>
            <AgentStatus agentKey={a.agentKey} />
          </article>
        ))}
      </div>
    </section>
  );
}
