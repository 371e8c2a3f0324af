-- Origin replies (issue 9): verified ingest endpoints give a task an immutable reply address; a governed reply posts
-- there through a connection (an outbound credential owned by one tenant, its secret encrypted at rest).

-- Where a task's answer may be posted, derived at ingest from a VERIFIED delivery body; NULL for every other task.
-- Immutable once the row exists: the trigger below refuses any UPDATE that changes it, whoever runs it.
ALTER TABLE tasks ADD COLUMN reply_to jsonb;

CREATE FUNCTION tasks_reply_to_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'tasks.reply_to is immutable (task %)', OLD.id USING ERRCODE = 'check_violation';
END
$$;
CREATE TRIGGER tasks_reply_to_immutable BEFORE UPDATE ON tasks
  FOR EACH ROW WHEN (OLD.reply_to IS DISTINCT FROM NEW.reply_to) EXECUTE FUNCTION tasks_reply_to_immutable();

-- A tenant's webhook receiver. `id` is the URL token (unguessable, 128 random bits): for `generic` it is the only
-- credential. Verification secrets are vault envelopes (src/vault/secret-cipher.ts), never stored in clear; the
-- previous one stays valid until `previous_secret_expires_at` so a rotation does not drop deliveries in flight.
CREATE TABLE ingest_endpoints (
  id                          text        PRIMARY KEY,
  org_id                      text        NOT NULL REFERENCES tenants (org_id),
  source                      text        NOT NULL CHECK (source IN ('github', 'gitea', 'slack', 'cairn', 'generic')),
  -- `name` (the latest version at delivery time) or `name@version`.
  workflow                    text        NOT NULL,
  secret_ciphertext           text,
  secret_fingerprint          text,
  previous_secret_ciphertext  text,
  previous_secret_expires_at  timestamptz,
  enabled                     boolean     NOT NULL DEFAULT true,
  created_at                  timestamptz NOT NULL DEFAULT now(),
  updated_at                  timestamptz NOT NULL DEFAULT now(),
  CHECK ((source = 'generic') = (secret_ciphertext IS NULL))
);
CREATE INDEX ingest_endpoints_org ON ingest_endpoints (org_id, created_at);

-- One row per verified delivery, keyed by the provider's delivery id: a redelivery finds it and returns the same
-- task. `cause` says what the delivery did: started a task, was our own reply coming back, or carried nothing to do.
CREATE TABLE ingest_deliveries (
  endpoint_id   text        NOT NULL REFERENCES ingest_endpoints (id),
  delivery_id   text        NOT NULL,
  org_id        text        NOT NULL,
  event         text        NOT NULL,
  cause         text        NOT NULL CHECK (cause IN ('task_started', 'self_reply', 'ignored')),
  task_id       uuid        REFERENCES tasks (id),
  -- sha256 (hex) of the raw body: GitHub and Gitea sign the body but not the delivery id, so a captured delivery
  -- resent under a new id is recognised by its body.
  body_sha256   text,
  received_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (endpoint_id, delivery_id)
);
CREATE INDEX ingest_deliveries_body ON ingest_deliveries (endpoint_id, body_sha256) WHERE body_sha256 IS NOT NULL;

-- An outbound credential owned by exactly one tenant. `account_key` is what an address must name to select it:
-- the forge host (github, gitea), the Slack team id, the Cairn base URL. `targets`, when not empty, must admit the
-- address (repository globs such as `acme/*`, Slack channel ids). `bot_id` / `app_id` are learnt from our own
-- Slack posts, so the echo of a post can be recognised.
CREATE TABLE connections (
  id                  uuid        PRIMARY KEY,
  org_id              text        NOT NULL REFERENCES tenants (org_id),
  kind                text        NOT NULL CHECK (kind IN ('github', 'gitea', 'slack', 'cairn')),
  account_key         text        NOT NULL,
  api_base_url        text        NOT NULL,
  secret_ciphertext   text        NOT NULL,
  secret_fingerprint  text        NOT NULL,
  targets             text[]      NOT NULL DEFAULT '{}',
  bot_id              text,
  app_id              text,
  -- The provider answered 429 (or its equivalent): no reply is dialed on this connection before then.
  rate_limited_until  timestamptz,
  created_by          text        NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  rotated_at          timestamptz,
  UNIQUE (org_id, kind, account_key)
);

-- Every reply attempt. Written (with its audit row) BEFORE any dial; the sender claims a `pending` row by moving it
-- to `dialing`, so a crash mid-request leaves `dialing`, which becomes `unknown` and is never re-sent. `refused`
-- rows record refusals decided before any dial; they do not hold the idempotency key.
CREATE TABLE origin_replies (
  id               uuid        PRIMARY KEY,
  org_id           text        NOT NULL,
  task_id          uuid        NOT NULL REFERENCES tasks (id),
  -- The step whose worker asked; NULL when a tenant posted through the API or CLI.
  step_id          text,
  attempt          integer,
  -- The id of the request (the worker's CONTROL envelope, or the API call): how the caller finds its outcome.
  request_id       text        NOT NULL,
  actor            text        NOT NULL,
  idempotency_key  text        NOT NULL,
  connection_id    uuid        REFERENCES connections (id) ON DELETE SET NULL,
  -- `parked`: the tenant's policy requires an approval (`approval_id`); approved it becomes `pending`, denied `refused`.
  state            text        NOT NULL CHECK (state IN ('parked', 'pending', 'dialing', 'sent', 'failed', 'unknown', 'refused')),
  approval_id      uuid,
  code             text,
  message          text,
  address_kind     text,
  address_display  text,
  -- The words to post; kept so a pending row can be sent after a crash.
  text             text        NOT NULL,
  text_sha256      text        NOT NULL,
  provider_id      text,
  permalink        text,
  dial_attempts    integer     NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz,
  claimed_until    timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  finished_at      timestamptz
);
CREATE UNIQUE INDEX origin_replies_idempotent ON origin_replies (org_id, task_id, idempotency_key) WHERE state <> 'refused';
CREATE UNIQUE INDEX origin_replies_request ON origin_replies (org_id, task_id, request_id);
CREATE INDEX origin_replies_open ON origin_replies (next_attempt_at) WHERE state IN ('pending', 'dialing');
CREATE INDEX origin_replies_provider ON origin_replies (org_id, provider_id) WHERE provider_id IS NOT NULL;
-- The sender dials one reply per connection at a time: it looks for a connection's row in flight.
CREATE INDEX origin_replies_dialing ON origin_replies (connection_id) WHERE state = 'dialing';

-- An approval may hold a reply instead of a step's hop (action origin_reply): it names the reply row.
ALTER TABLE approvals ADD COLUMN reply_id uuid;

-- Token buckets for replies per (tenant, actor), shared by every coordinator and gateway.
CREATE TABLE reply_buckets (
  org_id      text             NOT NULL,
  actor       text             NOT NULL,
  tokens      double precision NOT NULL,
  updated_at  timestamptz      NOT NULL,
  PRIMARY KEY (org_id, actor)
);

GRANT SELECT, INSERT, UPDATE, DELETE ON ingest_endpoints, ingest_deliveries, connections, origin_replies, reply_buckets TO switchyard_app;

DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['ingest_endpoints', 'ingest_deliveries', 'connections', 'origin_replies', 'reply_buckets']
  LOOP
    EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
    EXECUTE format(
      'CREATE POLICY tenant_isolation ON %I TO switchyard_app
         USING (org_id = current_setting(''switchyard.org_id'', true))
         WITH CHECK (org_id = current_setting(''switchyard.org_id'', true))', t);
  END LOOP;
END
$$;
