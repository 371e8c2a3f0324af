-- FOREIGN bridge: one row per governed hop handed to an A2A agent. Written in the hop's transaction (status
-- pending_send, nothing sent yet); the post-commit sender opens the foreign task; pushes to the callback route and
-- the reconciliation sweep move it on; a terminal state resumes the step exactly once.

CREATE TABLE a2a_bridge (
  id                       uuid        PRIMARY KEY,
  org_id                   text        NOT NULL,
  task_id                  uuid        NOT NULL REFERENCES tasks (id),
  step_id                  text        NOT NULL,
  attempt                  integer     NOT NULL,
  agent_key                text        NOT NULL,
  -- The registry's preference at dispatch ('auto', '1.0', '0.3'); the dialect actually spoken once sent.
  dialect                  text        NOT NULL CHECK (dialect IN ('auto', '1.0', '0.3')),
  foreign_task_id          text,
  status                   text        NOT NULL CHECK (status IN ('pending_send', 'dispatched', 'working', 'completed', 'failed',
                                                                   'canceled', 'rejected', 'timed_out', 'send_failed')),
  -- sha256 (hex) of the per-bridge notification secret; the secret itself is never stored (see callback-token.ts).
  notification_token_hash  text        NOT NULL,
  -- The tenant link key the secret and the callback URL token derive from.
  token_kid                text        NOT NULL,
  -- What is sent: the step input and the hop's clearance floor (the hop was governed and audited with them).
  request                  jsonb       NOT NULL,
  clearance                integer     NOT NULL DEFAULT 0,
  artifacts                jsonb       NOT NULL DEFAULT '[]',
  last_state               text,
  -- The step attempt's due time (ms since epoch), known once the hop committed; the sender fills it in.
  deadline_ms              bigint,
  -- A sender working on the row holds it until then (several coordinators share the sending).
  claimed_until            timestamptz,
  created_at               timestamptz NOT NULL DEFAULT now(),
  updated_at               timestamptz NOT NULL DEFAULT now(),
  resolved_at              timestamptz,
  UNIQUE (org_id, foreign_task_id)
);

CREATE INDEX a2a_bridge_pending_send ON a2a_bridge (created_at) WHERE status = 'pending_send';
CREATE INDEX a2a_bridge_open ON a2a_bridge (updated_at) WHERE status IN ('pending_send', 'dispatched', 'working');
CREATE INDEX a2a_bridge_step ON a2a_bridge (task_id, step_id);

GRANT SELECT, INSERT, UPDATE, DELETE ON a2a_bridge TO switchyard_app;
ALTER TABLE a2a_bridge ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON a2a_bridge TO switchyard_app
  USING (org_id = current_setting('switchyard.org_id', true))
  WITH CHECK (org_id = current_setting('switchyard.org_id', true));
