-- Console sign-in sessions (issue 13; src/gateway/console/). A browser exchanges an API key for an opaque session
-- token in an HttpOnly cookie. Only the token's sha256 is stored (a leaked table yields no usable cookie) and never
-- the API key: the session names the key's id, so revoking the key ends its sessions on their next request. Read
-- and written by the gateway as the table owner (api_keys is not tenant-readable either): no grant to
-- switchyard_app.
CREATE TABLE console_sessions (
  token_hash   text        PRIMARY KEY,
  api_key_id   uuid        NOT NULL REFERENCES api_keys (id),
  -- The address that signed in, for an operator reading the table after an incident.
  source       text        NOT NULL DEFAULT '',
  created_at   timestamptz NOT NULL,
  -- Idle expiry counts from here; moved forward by use (at most every few seconds).
  last_seen_at timestamptz NOT NULL,
  -- Absolute expiry: created_at + the configured maximum, fixed at sign-in.
  expires_at   timestamptz NOT NULL,
  revoked_at   timestamptz
);
CREATE INDEX console_sessions_key ON console_sessions (api_key_id);
-- Sign-in deletes sessions past their absolute expiry.
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);

-- The console's flag history (AdminService.ListFlagHistory) reads flag changes from every chain, newest first;
-- without this it scans the whole audit log.
CREATE INDEX audit_log_flag_changes ON audit_log (at_ms) WHERE action = 'flag';

-- The console's agent page (ForeignAgentService.Status) lists an agent's newest bridges.
CREATE INDEX a2a_bridge_agent ON a2a_bridge (org_id, agent_key, created_at DESC);
