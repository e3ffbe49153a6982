-- Approval cards must be rebuilt after a restart (to edit them to "expired"), and a
-- deny-with-edit reply must reach a waiting turn even when decided from another process.

ALTER TABLE approvals ADD COLUMN requester_name TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN ask_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN reply TEXT;
CREATE INDEX grants_active ON grants (revoked_at, expires_at);
CREATE INDEX audit_at ON audit (at);
