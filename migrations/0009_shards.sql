-- Tenant shards owned by one coordinator each (issue 11; src/coordinator/shards.ts, shard-leases.ts).

-- The shard of a tenant: the first 32 bits of md5(org_id) modulo the shard count, exactly as shardOf() in
-- src/coordinator/shards.ts computes it, so SQL can pick the tenants of the shards a coordinator owns.
CREATE FUNCTION switchyard_shard_of(org_id text, shard_count integer) RETURNS integer
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT (('x' || substr(md5(org_id), 1, 8))::bit(32)::bigint % shard_count)::integer $$;

-- How many shards there are. Written by the first coordinator from SWITCHYARD_SHARD_COUNT; a process configured
-- with another count refuses to start (the shard of a tenant would differ between processes).
CREATE TABLE shard_config (
  singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  shard_count integer NOT NULL CHECK (shard_count BETWEEN 1 AND 1024),
  recorded_at timestamptz NOT NULL DEFAULT now()
);

-- Running coordinators, each renewing its row; the live ones split the shards among themselves.
CREATE TABLE coordinator_members (
  coordinator_id text PRIMARY KEY,
  host           text NOT NULL,
  pid            integer NOT NULL,
  joined_at      timestamptz NOT NULL DEFAULT now(),
  expires_at     timestamptz NOT NULL
);

-- Fencing tokens: every acquisition of a shard takes a new, larger one.
CREATE SEQUENCE shard_lease_tokens;

-- One row per shard. `owner` holds it until `expires_at` unless it renews; a takeover locks the row FOR UPDATE,
-- which waits for every transaction that checked the old token (FOR KEY SHARE) to end, then moves the token on.
CREATE TABLE shard_leases (
  shard       integer PRIMARY KEY CHECK (shard >= 0),
  owner       text,
  token       bigint NOT NULL DEFAULT 0,
  expires_at  timestamptz NOT NULL DEFAULT '-infinity',
  acquired_at timestamptz
);

GRANT SELECT ON shard_config, shard_leases, coordinator_members TO switchyard_app;
