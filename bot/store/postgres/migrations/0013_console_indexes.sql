-- What the web console reads a page at a time (bot/store/audit_search.py, bot/store/turns.py).
--
-- The audit log is paged newest first by (at, id); each filter's index starts with the
-- filtered column and continues with at and id (SQLite appends the rowid by itself;
-- PostgreSQL is told), so a filtered page is a short walk in order. audit_at serves an
-- unfiltered page.
CREATE INDEX audit_tool_at ON audit (tool, at, id);
CREATE INDEX audit_decision_at ON audit (decision, at, id);
CREATE INDEX audit_channel_at ON audit (channel, at, id);
CREATE INDEX audit_requester_at ON audit (requester, at, id);
CREATE INDEX audit_decided_by_at ON audit (decided_by, at, id);
-- The conversations with the latest activity, for the turns page.
CREATE INDEX sessions_recent ON sessions (updated_at, session_key);
