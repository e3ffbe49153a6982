-- What the web console shows of a tool call, and the names it shows people by.
--
-- tool_calls: how the call ended, as values (never read from its text). failed is 1 when the
-- tool ran and failed (a shell command's non-zero exit, an HTTP status of 400 or more, an MCP
-- result marked as an error, a handler that raised), 0 when it did not, and failure says how
-- (bot/tools/spec.py ToolFailure.label: "exit 1", "HTTP 404", "ToolFailed"); reason is the
-- outcome's reason (bot/tools/outcome.py OutcomeReason: denied_by_person, edited, ...).
-- decision, decided_by and decision_reason are what the approval step decided, as the
-- call's audit row says it (decision is an audit decision; NULL: nobody was asked and no
-- policy rule applied), grant_id the grant the call ran under, fingerprint the call's
-- fingerprint (its audit row's), by which an audit row finds its call. Rows recorded before
-- this migration have NULL in every one of them: the console says "not recorded".
ALTER TABLE tool_calls ADD COLUMN failed INTEGER;
ALTER TABLE tool_calls ADD COLUMN failure TEXT;
ALTER TABLE tool_calls ADD COLUMN reason TEXT;
ALTER TABLE tool_calls ADD COLUMN decision TEXT;
ALTER TABLE tool_calls ADD COLUMN decided_by TEXT;
ALTER TABLE tool_calls ADD COLUMN decision_reason TEXT;
ALTER TABLE tool_calls ADD COLUMN grant_id INTEGER;
ALTER TABLE tool_calls ADD COLUMN fingerprint TEXT;
CREATE INDEX tool_calls_fingerprint ON tool_calls (fingerprint);

-- display_names: the latest display name of each person who wrote to the bot, by identity
-- (<kind>:<user id>, e.g. telegram:12345), as the platform gave it with their last message
-- (format characters kept: the console cleans them when it shows a name). Shown beside the
-- id, never matched on. hatchway forget removes a person's row; retention removes rows not
-- seen for retention.days.
CREATE TABLE display_names (
    identity TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    seen_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX display_names_seen ON display_names (seen_at);
