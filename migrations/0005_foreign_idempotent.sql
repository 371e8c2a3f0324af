-- A foreign agent that may be sent the same step again: a timed-out or failed FOREIGN hop is re-sent (a new task at
-- the agent) only when the tenant registered the agent as idempotent. Off by default: a re-send can repeat the
-- agent's outside effects and cost.
ALTER TABLE foreign_agents ADD COLUMN idempotent boolean NOT NULL DEFAULT false;

-- Foreign hops the coordinator gave up on without re-sending are listed with the dead letters (`switchyard dlq list`,
-- AdminService/ListDeadLetters); this keeps that listing off a scan of every step.
CREATE INDEX steps_foreign_not_retried ON steps (updated_at) WHERE status = 'failed' AND (error ->> 'code') = 'FOREIGN_NOT_RETRIED';
