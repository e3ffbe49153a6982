-- Reminders and escalation of an unanswered approval card (docs/approvals.md): how many
-- reminders were sent and when the last one was, whom the card was escalated to (user ids,
-- comma-separated; NULL: not escalated) and when, and the agent whose turn asked (its
-- [agents.<name>.approval] table may set its own schedule). Rows written before this
-- migration have 0 / NULL: never reminded, not escalated, the default agent's schedule.
ALTER TABLE approvals ADD COLUMN reminders_sent INTEGER NOT NULL DEFAULT 0;
ALTER TABLE approvals ADD COLUMN reminded_at DOUBLE PRECISION;
ALTER TABLE approvals ADD COLUMN escalated_to TEXT;
ALTER TABLE approvals ADD COLUMN escalated_at DOUBLE PRECISION;
ALTER TABLE approvals ADD COLUMN agent TEXT;
