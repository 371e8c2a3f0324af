-- Tenant fairness (issue 15; src/fairness/). A ready step that may not go out yet (its destination is at capacity,
-- or its tenant at a limit) is `held`: it stays in Postgres, never on a stream, until the shard owner releases it.

ALTER TABLE steps DROP CONSTRAINT steps_status_check;
ALTER TABLE steps ADD CONSTRAINT steps_status_check CHECK (status IN ('pending', 'dispatched', 'retrying', 'parked',
  'waiting', 'completed', 'failed', 'cancelled', 'held'));

-- In-flight work per destination and tenant: what admission counts.
CREATE INDEX steps_in_flight ON steps (destination, org_id) WHERE status = 'dispatched';
CREATE INDEX steps_in_flight_org ON steps (org_id) WHERE status = 'dispatched';

-- The queue of held steps, one row per held step (deleted in the transaction that dispatches, cancels or fails it).
-- `seq` keeps arrival order within a tenant; `priority` (1–5, higher first) and `concurrency_key` come from the
-- step's definition; `reason` is what `task get` shows.
CREATE TABLE held_steps (
  seq             bigserial   PRIMARY KEY,
  org_id          text        NOT NULL,
  task_id         uuid        NOT NULL,
  step_id         text        NOT NULL,
  destination     text        NOT NULL,
  priority        smallint    NOT NULL DEFAULT 3 CHECK (priority BETWEEN 1 AND 5),
  concurrency_key text,
  reason          text        NOT NULL DEFAULT '',
  held_at_ms      bigint      NOT NULL,
  UNIQUE (task_id, step_id),
  FOREIGN KEY (task_id, step_id) REFERENCES steps (task_id, step_id)
);
CREATE INDEX held_steps_queue ON held_steps (destination, org_id, priority DESC, seq);

-- Operator-set limits, audited like flags. `org_id = ''` is a destination-wide row (its capacity); `destination = ''`
-- a tenant-wide row (its weight and overall in-flight cap); both set: the tenant's limits on that destination.
CREATE TABLE dispatch_limits (
  org_id        text             NOT NULL,
  destination   text             NOT NULL,
  max_in_flight integer          CHECK (max_in_flight > 0),
  rate_per_sec  double precision CHECK (rate_per_sec > 0),
  burst         integer          CHECK (burst > 0),
  weight        integer          CHECK (weight BETWEEN 1 AND 1000),
  updated_by    text             NOT NULL,
  reason        text             NOT NULL,
  updated_at    timestamptz      NOT NULL DEFAULT now(),
  PRIMARY KEY (org_id, destination),
  CHECK (org_id <> '' OR destination <> '')
);

-- Token buckets of (tenant, destination) rate limits; written by the tenant's shard owner in the dispatching
-- transaction.
CREATE TABLE dispatch_buckets (
  org_id      text             NOT NULL,
  destination text             NOT NULL,
  tokens      double precision NOT NULL,
  at_ms       bigint           NOT NULL,
  PRIMARY KEY (org_id, destination)
);

-- The load of destinations across every tenant (in flight, held), for admission inside tenant API transactions,
-- which row-level security limits to their own tenant's rows: counts only, no tenant's rows.
CREATE FUNCTION switchyard_destination_load(destinations text[])
  RETURNS TABLE (destination text, in_flight bigint, held bigint)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$
    SELECT d.destination,
           (SELECT count(*) FROM steps s WHERE s.status = 'dispatched' AND s.destination = d.destination),
           (SELECT count(*) FROM held_steps h WHERE h.destination = d.destination)
    FROM unnest(destinations) AS d(destination)
  $$;

GRANT SELECT, INSERT, UPDATE, DELETE ON held_steps, dispatch_buckets TO switchyard_app;
GRANT USAGE, SELECT ON SEQUENCE held_steps_seq_seq TO switchyard_app;
GRANT SELECT ON dispatch_limits TO switchyard_app;
GRANT EXECUTE ON FUNCTION switchyard_destination_load(text[]) TO switchyard_app;
ALTER TABLE held_steps ENABLE ROW LEVEL SECURITY;
ALTER TABLE dispatch_buckets ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON held_steps TO switchyard_app
  USING (org_id = current_setting('switchyard.org_id', true)) WITH CHECK (org_id = current_setting('switchyard.org_id', true));
CREATE POLICY tenant_isolation ON dispatch_buckets TO switchyard_app
  USING (org_id = current_setting('switchyard.org_id', true)) WITH CHECK (org_id = current_setting('switchyard.org_id', true));
