-- Group context (bot/context, docs/context.md): messages of an allowed group conversation
-- that were not addressed to the bot, kept for context only, in a bounded window per
-- conversation ([channels.<kind>.<alias>.context] group_messages, group_minutes).
--
-- context_lines: one row per kept message. thread_id is '' at the conversation's top level.
-- member is 0 for a sender outside the alias's allowed_users. at is when the message
-- arrived and expires_at when it leaves the window (epoch seconds); the rows past it are
-- trimmed as the conversation's next line is kept, and by the daily retention job.
CREATE TABLE context_lines (
    id INTEGER PRIMARY KEY,
    channel TEXT NOT NULL,              -- kind.alias
    conversation_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    message_id TEXT NOT NULL,           -- the platform's, as in the inbox
    sender_id TEXT NOT NULL,
    sender_name TEXT NOT NULL,
    member INTEGER NOT NULL,
    text TEXT NOT NULL,
    at REAL NOT NULL,
    expires_at REAL NOT NULL,
    UNIQUE (channel, message_id)
);
CREATE INDEX context_lines_conversation ON context_lines (channel, conversation_id, id);
CREATE INDEX context_lines_sender ON context_lines (sender_id);
CREATE INDEX context_lines_expiry ON context_lines (expires_at);
