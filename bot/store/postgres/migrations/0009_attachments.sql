-- Files users sent with their messages: one row per file saved at the start of the turn
-- that answered it, so later turns (view_attachment) find it and retention, or forgetting
-- a user or a conversation, deletes the files with their rows.
CREATE TABLE attachments (
    id TEXT PRIMARY KEY,                -- short random hex, what the model names it by
    session_key TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    channel TEXT NOT NULL,              -- kind.alias
    conversation_id TEXT NOT NULL,
    user_id TEXT NOT NULL,              -- the sender's platform id
    name TEXT NOT NULL,                 -- the file's name as the user sent it
    kind TEXT NOT NULL,                 -- image | text | pdf | binary (by content)
    mime_type TEXT NOT NULL,            -- detected from the content
    size BIGINT NOT NULL,               -- bytes saved
    path TEXT NOT NULL,                 -- the file under <state_dir>/attachments
    workspace_path TEXT,                -- its copy in the conversation's workspace, if any
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX attachments_session ON attachments (session_key);
CREATE INDEX attachments_created ON attachments (created_at);
CREATE INDEX attachments_user ON attachments (channel, user_id);
CREATE INDEX attachments_conversation ON attachments (channel, conversation_id);
