-- Rate limits, retention and forgetting a person.
--
-- rate_limit_buckets: the token buckets of [rate_limits] (one per sender and one per
-- conversation of a channel), written behind the gateway's own copy so that a restart keeps
-- them. A bucket that has filled up again carries nothing and is deleted.
CREATE TABLE rate_limit_buckets (
    bucket TEXT PRIMARY KEY,            -- user:<kind.alias>:<user id> | conversation:<kind.alias>:<conversation id>
    tokens DOUBLE PRECISION NOT NULL,   -- messages it may still take, counted at updated_at
    updated_at DOUBLE PRECISION NOT NULL, -- wall clock (epoch seconds)
    noticed_at DOUBLE PRECISION NOT NULL DEFAULT 0 -- when its sender or conversation was last told to slow down
);

-- retention_marks: what the daily retention job keeps between runs: when it last ran
-- ('last_run_at') and the age below which audit rows may be deleted ('audit_delete_before').
CREATE TABLE retention_marks (
    name TEXT PRIMARY KEY,
    value DOUBLE PRECISION NOT NULL
);

-- Who sent each inbox entry, so that forgetting a person finds their messages without
-- reading every envelope; rows admitted before this migration are filled from their payload.
ALTER TABLE inbox ADD COLUMN sender_id TEXT;
UPDATE inbox SET sender_id = payload::jsonb #>> '{sender,id}' WHERE payload <> '';
CREATE INDEX inbox_sender ON inbox (channel, sender_id);
CREATE INDEX inbox_session ON inbox (session_key);

-- Retention deletes by age, a turn's rows together; forgetting deletes by turn and session.
CREATE INDEX inbox_age ON inbox (updated_at);
CREATE INDEX outbox_entry ON outbox (channel, message_id);
CREATE INDEX outbox_age ON outbox (updated_at);
CREATE INDEX messages_turn ON messages (turn_id);
CREATE INDEX messages_age ON messages (created_at);
CREATE INDEX tool_calls_age ON tool_calls (created_at);
CREATE INDEX tool_calls_session ON tool_calls (session_key);
CREATE INDEX approvals_age ON approvals (created_at);
CREATE INDEX approvals_requester ON approvals (channel, requester);
CREATE INDEX audit_requester ON audit (channel, requester);
CREATE INDEX audit_decided_by ON audit (channel, decided_by);
CREATE INDEX memory_created_by ON memory (created_by);
CREATE INDEX memory_scope ON memory (scope_key);

-- Audit rows stay append-only with two sanctioned exceptions, each enforced here:
-- 1. forgetting a person replaces their id, as requester or as decider, with a tombstone
--    ('forgotten:' and a random token); nothing else of the row may change, and a
--    tombstone is never changed again;
-- 2. the retention job deletes rows older than the cutoff it recorded in retention_marks
--    ('audit_delete_before'), and never a row younger than 30 days, whatever that says.
DROP TRIGGER audit_no_update ON audit;
CREATE FUNCTION audit_update_check() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT (
        new.id IS NOT DISTINCT FROM old.id AND new.at IS NOT DISTINCT FROM old.at
        AND new.channel IS NOT DISTINCT FROM old.channel
        AND new.conversation_id IS NOT DISTINCT FROM old.conversation_id
        AND new.tool IS NOT DISTINCT FROM old.tool
        AND new.summary IS NOT DISTINCT FROM old.summary
        AND new.fingerprint IS NOT DISTINCT FROM old.fingerprint
        AND new.decision IS NOT DISTINCT FROM old.decision
        AND new.reason IS NOT DISTINCT FROM old.reason
        AND new.latency_ms IS NOT DISTINCT FROM old.latency_ms
        AND (new.requester IS NOT DISTINCT FROM old.requester
             OR (new.requester LIKE 'forgotten:%' AND old.requester NOT LIKE 'forgotten:%'))
        AND (new.decided_by IS NOT DISTINCT FROM old.decided_by
             OR (new.decided_by LIKE 'forgotten:%' AND old.decided_by NOT LIKE 'forgotten:%'
                 AND old.decided_by <> 'runtime'))
    ) THEN
        RAISE EXCEPTION 'audit rows are append-only'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN new;
END
$$;
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
FOR EACH ROW EXECUTE FUNCTION audit_update_check();
DROP TRIGGER audit_no_delete ON audit;
CREATE FUNCTION audit_delete_check() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF old.at >= LEAST(
        COALESCE((SELECT value FROM retention_marks WHERE name = 'audit_delete_before'), 0),
        EXTRACT(EPOCH FROM clock_timestamp())::DOUBLE PRECISION - 30 * 86400
    ) THEN
        RAISE EXCEPTION 'audit rows are append-only'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN old;
END
$$;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
FOR EACH ROW EXECUTE FUNCTION audit_delete_check();
