-- The sweep looks for pending workflow steps whose needs all completed (a lost transition to repair);
-- this keeps that look-up to the pending steps instead of the whole steps table.
CREATE INDEX steps_pending ON steps (task_id) WHERE status = 'pending' AND kind = 'workflow';
