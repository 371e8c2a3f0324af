-- Fan-out delegation (issue 14): a step's turns are counted apart from its sub-queries. One turn may now ask
-- several sub-queries (or none: keep waiting), so `delegations` (sub-queries asked, naming the next `.dN` step)
-- no longer numbers the turns. Until now every turn that stood down asked exactly one, so the two were equal.
ALTER TABLE steps ADD COLUMN turns integer NOT NULL DEFAULT 0;
UPDATE steps SET turns = delegations WHERE delegations > 0;
