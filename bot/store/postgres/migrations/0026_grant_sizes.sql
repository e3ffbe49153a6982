-- Grants chosen at click time (docs/approvals.md, "Grants chosen at click time"). An
-- approval row keeps the grant choices its card offered, as a JSON list of [key, label]
-- pairs (NULL: a row asked before this migration, whose card offered none). A grant keeps
-- the size its approver picked (the choice's label; NULL: an "Always" grant, or one made
-- before this migration) and, for an exact-arguments grant, the fingerprint of the call it
-- covers (NULL: any arguments of its tool).
ALTER TABLE approvals ADD COLUMN grant_choices TEXT;
ALTER TABLE grants ADD COLUMN size TEXT;
ALTER TABLE grants ADD COLUMN arguments_hash TEXT;
