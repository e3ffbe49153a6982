-- Which call each audit row is about: the turn id and the model's call id of the call that
-- was decided (or whose card was clicked), so that an operator goes from an audit row to
-- the call's row on the console's turns page and to `hatchway receipts verify --turn`.
-- An approval request keeps them too, for the rows written when it is answered, expires or
-- is refused a click. Rows written before this migration have NULL: "not recorded".
-- (Adding a column updates no row: the audit table's append-only triggers stay as they are.)
ALTER TABLE audit ADD COLUMN turn_id TEXT;
ALTER TABLE audit ADD COLUMN call_id TEXT;
ALTER TABLE approvals ADD COLUMN turn_id TEXT;
ALTER TABLE approvals ADD COLUMN call_id TEXT;

-- The call's fingerprint found an audit row's call until now (migration 0019); nothing reads
-- tool_calls by fingerprint any more.
DROP INDEX tool_calls_fingerprint;
