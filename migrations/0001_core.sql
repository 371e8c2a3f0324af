-- Core loop: workflows, policies, tasks and steps, dedupe, outbox, approvals, audit chain.
-- Every tenant row carries org_id (row-level security arrives with the control plane).

CREATE TABLE workflows (
  org_id      text        NOT NULL,
  name        text        NOT NULL,
  version     integer     NOT NULL,
  definition  jsonb       NOT NULL,
  digest      text        NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, name, version)
);
CREATE UNIQUE INDEX workflows_digest ON workflows (org_id, name, digest);

CREATE TABLE policies (
  org_id      text        NOT NULL,
  version     integer     NOT NULL,
  document    jsonb       NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, version)
);

CREATE TABLE tasks (
  id               uuid        PRIMARY KEY,
  org_id           text        NOT NULL,
  workflow_name    text        NOT NULL,
  workflow_version integer     NOT NULL,
  input            jsonb       NOT NULL,
  status           text        NOT NULL CHECK (status IN ('running', 'parked', 'completed', 'failed', 'cancelled')),
  budget           double precision,
  cost             double precision NOT NULL DEFAULT 0,
  error            jsonb,
  idempotency_key  text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  finished_at      timestamptz,
  FOREIGN KEY (org_id, workflow_name, workflow_version) REFERENCES workflows (org_id, name, version)
);
CREATE UNIQUE INDEX tasks_idempotency ON tasks (org_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX tasks_org_status ON tasks (org_id, status, created_at);

-- One row per workflow step, plus one per delegated sub-query (kind = 'delegation').
CREATE TABLE steps (
  task_id      uuid        NOT NULL REFERENCES tasks (id),
  step_id      text        NOT NULL,
  org_id       text        NOT NULL,
  kind         text        NOT NULL DEFAULT 'workflow' CHECK (kind IN ('workflow', 'delegation')),
  status       text        NOT NULL CHECK (status IN ('pending', 'dispatched', 'retrying', 'parked', 'waiting',
                                                      'completed', 'failed', 'cancelled')),
  destination  text        NOT NULL,
  attempt      integer     NOT NULL DEFAULT 0,
  depth        integer     NOT NULL DEFAULT 0,
  clearance    integer     NOT NULL DEFAULT 0,
  due_at_ms    bigint,
  cost         double precision NOT NULL DEFAULT 0,
  output       jsonb,
  error        jsonb,
  approval_id  uuid,
  -- Delegation steps: origin step, attempt, correlation id, query payload. Origin steps: turn checkpoint.
  delegation   jsonb,
  checkpoint   jsonb,
  delegations  integer     NOT NULL DEFAULT 0,
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (task_id, step_id)
);
CREATE INDEX steps_due ON steps (due_at_ms) WHERE status IN ('dispatched', 'retrying', 'waiting');

-- Inbound envelopes already applied; a redelivery finds its id here and changes nothing.
CREATE TABLE processed_envelopes (
  envelope_id  text        PRIMARY KEY,
  org_id       text        NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT now()
);
-- Retention deletes old rows by age; without this it scans the whole table.
CREATE INDEX processed_envelopes_age ON processed_envelopes (processed_at);

-- Transactional outbox: envelopes committed with the decision that produced them, published after commit.
CREATE TABLE outbox (
  id          bigserial   PRIMARY KEY,
  org_id      text        NOT NULL,
  stream      text        NOT NULL,
  envelope_id text        NOT NULL,
  envelope    bytea       NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX outbox_created ON outbox (created_at);

CREATE TABLE approvals (
  id           uuid        PRIMARY KEY,
  org_id       text        NOT NULL,
  task_id      uuid        NOT NULL REFERENCES tasks (id),
  step_id      text        NOT NULL,
  action       text        NOT NULL,
  destination  text        NOT NULL,
  rule         text        NOT NULL,
  reason       text        NOT NULL,
  cost         double precision NOT NULL DEFAULT 0,
  status       text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied')),
  decided_by   text,
  decision_reason text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  decided_at   timestamptz
);
CREATE INDEX approvals_org_status ON approvals (org_id, status, created_at);

-- Per-tenant hash chain. hash = sha256(prev_hash || canonical(row)); see src/governance/audit-hash.ts.
CREATE TABLE audit_log (
  org_id        text        NOT NULL,
  seq           bigint      NOT NULL,
  prev_hash     text        NOT NULL,
  hash          text        NOT NULL,
  action        text        NOT NULL,
  actor         text        NOT NULL,
  destination   text        NOT NULL,
  verdict       text        NOT NULL,
  rule          text        NOT NULL,
  reason        text        NOT NULL,
  payload_hash  text        NOT NULL,
  cost          double precision NOT NULL DEFAULT 0,
  task_id       text        NOT NULL,
  step_id       text        NOT NULL,
  envelope_id   text        NOT NULL,
  at_ms         bigint      NOT NULL,
  PRIMARY KEY (org_id, seq)
);
CREATE INDEX audit_log_task ON audit_log (org_id, task_id);

-- The chain head per tenant; locked FOR UPDATE by whoever appends, so concurrent coordinators never fork it.
CREATE TABLE audit_heads (
  org_id text   PRIMARY KEY,
  seq    bigint NOT NULL,
  hash   text   NOT NULL
);
