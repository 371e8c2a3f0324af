-- Issue 10: FOREIGN finished. A second transport (MCP) beside A2A, push-or-poll delivery, metered cost and minimal
-- data egress. `a2a_bridge` keeps its name: it is the bridge of every foreign hop, whatever the transport.

-- protocol: the A2A dialect preference as before ('auto', '1.0', '0.3'), or 'mcp' for a tool reached over MCP.
ALTER TABLE foreign_agents DROP CONSTRAINT foreign_agents_protocol_check;
ALTER TABLE foreign_agents ADD CONSTRAINT foreign_agents_protocol_check CHECK (protocol IN ('auto', '1.0', '0.3', 'mcp'));
-- The MCP tool called (NULL for A2A agents).
ALTER TABLE foreign_agents ADD COLUMN tool text;
-- How an A2A agent's result reaches us: 'auto' (push when the card offers it, else polling), 'push' or 'poll'
-- (forced, e.g. for agents that cannot reach our callback URL through a firewall).
ALTER TABLE foreign_agents ADD COLUMN delivery text NOT NULL DEFAULT 'auto' CHECK (delivery IN ('auto', 'push', 'poll'));
-- The step-input fields that may leave the perimeter (top-level keys or dotted paths such as task.city); NULL means
-- the whole input, as before.
ALTER TABLE foreign_agents ADD COLUMN send_fields text[];
-- Cost units per second of a hop's elapsed time, added to cost_estimate when the agent reports no usage.
ALTER TABLE foreign_agents ADD COLUMN cost_per_second double precision NOT NULL DEFAULT 0 CHECK (cost_per_second >= 0);

ALTER TABLE a2a_bridge DROP CONSTRAINT a2a_bridge_dialect_check;
ALTER TABLE a2a_bridge ADD CONSTRAINT a2a_bridge_dialect_check CHECK (dialect IN ('auto', '1.0', '0.3', 'mcp'));
-- How the result comes back once sent: 'push' (callbacks, polled only when quiet), 'poll' (GetTask with backoff)
-- or 'call' (the answer of the call itself: MCP).
ALTER TABLE a2a_bridge ADD COLUMN delivery text CHECK (delivery IN ('push', 'poll', 'call'));
-- When the next GetTask is due for a polled bridge, or for a pushed one whose terminal push must be confirmed
-- (it carried no artifacts); NULL when none is due.
ALTER TABLE a2a_bridge ADD COLUMN next_poll_at timestamptz;
ALTER TABLE a2a_bridge ADD COLUMN polls integer NOT NULL DEFAULT 0;
-- When the send started (the elapsed time a metered hop is priced by runs from here to resolved_at).
ALTER TABLE a2a_bridge ADD COLUMN sent_at timestamptz;
-- sha256 (hex) of exactly what was sent (the input after send_fields); also the payload hash of its audit row.
ALTER TABLE a2a_bridge ADD COLUMN sent_hash text;
-- Usage the agent reported ({cost?, inputTokens?, outputTokens?}), and how the hop was priced.
ALTER TABLE a2a_bridge ADD COLUMN usage jsonb;
ALTER TABLE a2a_bridge ADD COLUMN priced_by text;
-- Artifacts pushed after the bridge resolved: kept here (never merged into a RESULT already written) and counted.
ALTER TABLE a2a_bridge ADD COLUMN late_artifacts jsonb NOT NULL DEFAULT '[]';

CREATE INDEX a2a_bridge_poll_due ON a2a_bridge (next_poll_at)
  WHERE next_poll_at IS NOT NULL AND status IN ('dispatched', 'working');
