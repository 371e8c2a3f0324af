-- Concurrency keys (issue 15; src/fairness/concurrency-key.ts): a workflow step may name a key over the task's input
-- (`concurrency: { key: task.input.customerId, limit: 2 }`); at most `limit` steps of one tenant with the same key
-- value are in flight at once. The key is written on the step when it is dispatched (what admission counts) and on
-- its held row with the limit (what the releaser counts: a held step whose key is at its limit cannot go, so it is
-- neither released nor counted as waiting for a slot).

ALTER TABLE steps ADD COLUMN concurrency_key text;
CREATE INDEX steps_in_flight_key ON steps (org_id, concurrency_key) WHERE status = 'dispatched' AND concurrency_key IS NOT NULL;

ALTER TABLE held_steps ADD COLUMN concurrency_limit integer CHECK (concurrency_limit > 0);
ALTER TABLE held_steps ADD CONSTRAINT held_steps_key_has_limit CHECK ((concurrency_key IS NULL) = (concurrency_limit IS NULL));
CREATE INDEX held_steps_keyed ON held_steps (destination, org_id, concurrency_key, priority DESC, seq) WHERE concurrency_key IS NOT NULL;

-- The held steps with a key that could go now as far as their keys are concerned: of each (tenant, key), the first
-- ones (priority, then arrival) up to the key's room (its limit less its steps in flight). Steps without a key are
-- not limited by one (the callers count them straight from held_steps, through its queue index).
CREATE FUNCTION switchyard_releasable_keyed(destinations text[])
  RETURNS TABLE (seq bigint, org_id text, destination text, task_id uuid, step_id text, priority smallint, held_at_ms bigint)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$
    SELECT k.seq, k.org_id, k.destination, k.task_id, k.step_id, k.priority, k.held_at_ms
    FROM (SELECT h.*, row_number() OVER (PARTITION BY h.org_id, h.concurrency_key ORDER BY h.priority DESC, h.seq) AS rank
          FROM held_steps h
          WHERE h.concurrency_key IS NOT NULL AND (destinations IS NULL OR h.destination = ANY(destinations))) k
    LEFT JOIN LATERAL (SELECT count(*) AS flying FROM steps s
                       WHERE s.status = 'dispatched' AND s.org_id = k.org_id AND s.concurrency_key = k.concurrency_key) f ON true
    WHERE k.rank <= k.concurrency_limit - f.flying
  $$;

-- A destination's load as admission reads it (replacing 0012's): held counts the steps that could go now, so a step
-- waiting only for its own key does not make other tenants' new work queue behind it; and it counts at most
-- `held_cap` of them — admission only asks whether steps are held (and shows "100+"), and counting a backlog of
-- thousands in every batch's transaction was most of what holding cost.
DROP FUNCTION switchyard_destination_load(text[]);
CREATE FUNCTION switchyard_destination_load(destinations text[], held_cap integer)
  RETURNS TABLE (destination text, in_flight bigint, held bigint)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$
    SELECT d.destination,
           (SELECT count(*) FROM steps s WHERE s.status = 'dispatched' AND s.destination = d.destination),
           (SELECT count(*) FROM (SELECT 1 FROM held_steps h WHERE h.destination = d.destination AND h.concurrency_key IS NULL LIMIT held_cap) x)
             -- Keys are the exception: no function call (planned per call) unless a keyed step is held there.
             + CASE WHEN EXISTS (SELECT 1 FROM held_steps h WHERE h.destination = d.destination AND h.concurrency_key IS NOT NULL)
                    THEN (SELECT count(*) FROM (SELECT 1 FROM switchyard_releasable_keyed(ARRAY[d.destination]) LIMIT held_cap) y) ELSE 0 END
    FROM unnest(destinations) AS d(destination)
  $$;

GRANT EXECUTE ON FUNCTION switchyard_destination_load(text[], integer) TO switchyard_app;
GRANT EXECUTE ON FUNCTION switchyard_releasable_keyed(text[]) TO switchyard_app;
