-- Control plane: tenants and API keys, live flags, approval expiry and signed links, signed audit checkpoints,
-- per-tenant daily budgets, the foreign-agent registry, and row-level security for tenant traffic.

CREATE TABLE tenants (
  org_id        text        PRIMARY KEY CHECK (org_id ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
  name          text        NOT NULL,
  daily_budget  double precision CHECK (daily_budget IS NULL OR daily_budget > 0),
  created_at    timestamptz NOT NULL DEFAULT now()
);

-- Keys are shown once at creation and stored as sha256 hashes; `key_prefix` identifies a key in listings.
CREATE TABLE api_keys (
  id            uuid        PRIMARY KEY,
  org_id        text        REFERENCES tenants (org_id),
  kind          text        NOT NULL CHECK (kind IN ('tenant', 'admin')),
  name          text        NOT NULL,
  key_hash      text        NOT NULL UNIQUE,
  key_prefix    text        NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  revoked_at    timestamptz,
  last_used_at  timestamptz,
  CHECK ((kind = 'admin') = (org_id IS NULL))
);

-- Live flags. A missing row means "the environment's default". scope is '' for global flags.
CREATE TABLE flags (
  name        text        NOT NULL,
  scope_kind  text        NOT NULL CHECK (scope_kind IN ('global', 'tenant', 'role', 'team')),
  scope       text        NOT NULL DEFAULT '',
  enabled     boolean     NOT NULL,
  updated_by  text        NOT NULL,
  reason      text        NOT NULL DEFAULT '',
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (name, scope_kind, scope)
);

ALTER TABLE approvals ADD COLUMN expires_at timestamptz;
ALTER TABLE approvals ADD COLUMN decided_via text;
CREATE INDEX approvals_expiry ON approvals (expires_at) WHERE status = 'pending';

-- Per-tenant HMAC keys for signed links (approval links now, callback URLs later); rotatable by key id.
CREATE TABLE link_keys (
  org_id      text        NOT NULL,
  kid         text        NOT NULL,
  secret      bytea       NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  retired_at  timestamptz,
  PRIMARY KEY (org_id, kid)
);

-- A signed link works once: its token hash is recorded when used.
CREATE TABLE used_link_tokens (
  token_hash  text        PRIMARY KEY,
  org_id      text        NOT NULL,
  subject     text        NOT NULL,
  used_at     timestamptz NOT NULL DEFAULT now()
);

-- Ed25519 keys that sign audit checkpoints; retired keys stay to verify old checkpoints.
CREATE TABLE checkpoint_keys (
  kid          text        PRIMARY KEY,
  public_key   text        NOT NULL,
  private_key  text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  retired_at   timestamptz
);

CREATE TABLE audit_checkpoints (
  org_id     text        NOT NULL,
  seq        bigint      NOT NULL,
  hash       text        NOT NULL,
  at_ms      bigint      NOT NULL,
  kid        text        NOT NULL REFERENCES checkpoint_keys (kid),
  signature  text        NOT NULL,
  PRIMARY KEY (org_id, seq)
);

CREATE TABLE tenant_daily_cost (
  org_id  text             NOT NULL,
  day     date             NOT NULL,
  cost    double precision NOT NULL DEFAULT 0,
  PRIMARY KEY (org_id, day)
);

-- Registry of agents outside the perimeter (used by FOREIGN dispatch). Never holds a secret: only a reference.
CREATE TABLE foreign_agents (
  org_id             text        NOT NULL,
  agent_key          text        NOT NULL CHECK (agent_key ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$'),
  base_url           text        NOT NULL,
  protocol           text        NOT NULL DEFAULT 'auto' CHECK (protocol IN ('auto', '1.0', '0.3')),
  credential_ref     text,
  allow_host         text        NOT NULL,
  skills             text[]      NOT NULL DEFAULT '{}',
  clearance_ceiling  integer     NOT NULL DEFAULT 0 CHECK (clearance_ceiling >= 0),
  cost_estimate      double precision NOT NULL DEFAULT 0 CHECK (cost_estimate >= 0),
  enabled            boolean     NOT NULL DEFAULT true,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, agent_key)
);

-- Row-level security. Tenant API traffic runs as switchyard_app (no BYPASSRLS) with switchyard.org_id set per
-- transaction; the coordinator and operator commands run as the owner and are not subject to these policies.
DO $$
BEGIN
  CREATE ROLE switchyard_app NOLOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
  NULL; -- roles are cluster-wide: another database (or a concurrent migrator) created it
END
$$;

GRANT USAGE ON SCHEMA public TO switchyard_app;
GRANT SELECT ON schema_migrations TO switchyard_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON
  workflows, policies, tasks, steps, processed_envelopes, outbox, approvals, tenant_daily_cost, foreign_agents
TO switchyard_app;
-- The audit chain is append-only for tenant traffic: rows are inserted, the head moves forward, nothing else.
GRANT SELECT, INSERT ON audit_log TO switchyard_app;
GRANT SELECT, INSERT, UPDATE ON audit_heads TO switchyard_app;
GRANT SELECT ON audit_checkpoints TO switchyard_app;
-- A foreign hop dispatched by an API call signs its callback URL with the tenant's link key (its own rows only).
GRANT SELECT, INSERT ON link_keys TO switchyard_app;
GRANT SELECT ON tenants, flags TO switchyard_app;
-- Never the private half: tenants may verify checkpoints, not sign them.
GRANT SELECT (kid, public_key, created_at, retired_at) ON checkpoint_keys TO switchyard_app;
GRANT USAGE, SELECT ON SEQUENCE outbox_id_seq TO switchyard_app;

DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['workflows', 'policies', 'tasks', 'steps', 'processed_envelopes', 'outbox', 'approvals',
                           'audit_log', 'audit_heads', 'audit_checkpoints', 'tenant_daily_cost', 'foreign_agents',
                           'link_keys']
  LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format(
      'CREATE POLICY tenant_isolation ON %I TO switchyard_app
         USING (org_id = current_setting(''switchyard.org_id'', true))
         WITH CHECK (org_id = current_setting(''switchyard.org_id'', true))', t);
  END LOOP;
END
$$;

-- Tenants see only their own tenant row.
ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_self ON tenants TO switchyard_app USING (org_id = current_setting('switchyard.org_id', true));
