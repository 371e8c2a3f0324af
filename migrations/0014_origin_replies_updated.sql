-- The reply-outcome relay (issue 27 §3, src/replies/reply-outcome-relay.ts) copies reply outcomes to Redis for
-- harnesses without database credentials. Every coordinator polls it every ~100 ms: each poll reads the rows whose
-- updated_at moved since the previous one (every write of a reply row sets updated_at = now()), in pages by
-- (updated_at, id), so without this index every poll would scan every reply ever made.
CREATE INDEX origin_replies_updated ON origin_replies (updated_at, id);

-- The one change with no write: a `sent` row whose sender's lease lapsed while it looked up the permalink (its
-- last write failed) becomes final for a caller when claimed_until passes. Few rows are ever in this state.
CREATE INDEX origin_replies_lapsing ON origin_replies (claimed_until) WHERE state = 'sent' AND claimed_until IS NOT NULL;
