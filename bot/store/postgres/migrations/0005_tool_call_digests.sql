-- What a receipt signs that the row did not keep: the SHA-256 (hex) of the full arguments
-- as they ran (canonical JSON; NULL when they never decoded) and of the full result (the
-- row keeps both masked and cut). Receipts are looked up by call id.

ALTER TABLE tool_calls ADD COLUMN arguments_sha256 TEXT;
ALTER TABLE tool_calls ADD COLUMN result_sha256 TEXT;
CREATE INDEX tool_calls_call ON tool_calls (call_id);
