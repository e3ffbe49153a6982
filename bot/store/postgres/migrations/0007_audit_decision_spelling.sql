-- Every audit decision has one spelling (bot.store.audit.Decision), in the past tense like
-- the rest: the policy's own decisions were stored in its words, 'allow' and 'deny', next to
-- 'denied' for a person's no. Audit rows are append-only: the trigger that refuses updates
-- is lifted for these statements only and put back as it was, in the same transaction.

DROP TRIGGER audit_no_update ON audit;
UPDATE audit SET decision = 'policy_allowed' WHERE decision = 'allow';
UPDATE audit SET decision = 'policy_denied' WHERE decision = 'deny';
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
FOR EACH ROW EXECUTE FUNCTION audit_append_only();
