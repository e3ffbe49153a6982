-- hatchway schema, version 1. Tables for later features are created here too.

CREATE TABLE inbox (
    id INTEGER PRIMARY KEY,
    channel TEXT NOT NULL,              -- kind.alias
    message_id TEXT NOT NULL,           -- platform message id (idempotency key)
    envelope_id TEXT NOT NULL,
    session_key TEXT NOT NULL,
    payload TEXT NOT NULL DEFAULT '',   -- JSON of the envelope, to resume or answer after a restart
    status TEXT NOT NULL,               -- received | processing | done | failed
    error TEXT,
    received_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    UNIQUE (channel, message_id)
);
CREATE INDEX inbox_status ON inbox (status);

CREATE TABLE sessions (
    session_key TEXT PRIMARY KEY,
    generation INTEGER NOT NULL DEFAULT 0,  -- bumped by /new
    updated_at REAL NOT NULL
);

CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    session_key TEXT NOT NULL,
    generation INTEGER NOT NULL,
    turn_id TEXT NOT NULL,
    role TEXT NOT NULL,
    body TEXT NOT NULL,                 -- JSON of the ChatMessage
    created_at REAL NOT NULL
);
CREATE INDEX messages_session ON messages (session_key, generation, id);

CREATE TABLE tool_calls (
    id INTEGER PRIMARY KEY,
    turn_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    session_key TEXT NOT NULL,
    channel TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,            -- scrubbed
    status TEXT NOT NULL,
    synthetic INTEGER NOT NULL,
    observation TEXT NOT NULL,          -- bounded, scrubbed
    duration_ms REAL NOT NULL,
    receipt TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX tool_calls_turn ON tool_calls (turn_id);

CREATE TABLE approvals (
    id TEXT PRIMARY KEY,                -- opaque approval id
    channel TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    thread_id TEXT,
    session_key TEXT NOT NULL,
    requester TEXT NOT NULL,
    tool TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    summary TEXT NOT NULL,              -- scrubbed, JSON list of lines
    status TEXT NOT NULL,               -- pending | approved | denied | expired | edited | always
    decided_by TEXT,
    reason TEXT,
    card_refs TEXT NOT NULL DEFAULT '[]', -- JSON list of posted cards (channel, conversation, thread, message id)
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    decided_at REAL
);
CREATE INDEX approvals_status ON approvals (status);

CREATE TABLE grants (
    id INTEGER PRIMARY KEY,
    tool TEXT NOT NULL,
    scope TEXT NOT NULL,                -- conversation | channel | global
    scope_key TEXT NOT NULL,            -- the conversation or channel it covers ('' for global)
    granted_by TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL,
    revoked_at REAL
);
CREATE INDEX grants_lookup ON grants (tool, scope, scope_key);

CREATE TABLE audit (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    channel TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    requester TEXT NOT NULL,
    tool TEXT NOT NULL,
    summary TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    decision TEXT NOT NULL,
    decided_by TEXT NOT NULL,           -- a person id, or 'runtime'
    reason TEXT NOT NULL DEFAULT '',
    latency_ms REAL NOT NULL DEFAULT 0
);
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;

CREATE TABLE pairings (
    code TEXT PRIMARY KEY,
    channel TEXT NOT NULL,
    user_id TEXT NOT NULL,
    display_name TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,               -- pending | approved | expired
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    approved_by TEXT,
    approved_at REAL
);
CREATE INDEX pairings_user ON pairings (channel, user_id);

CREATE TABLE channel_state (
    channel TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (channel, key)
);

CREATE TABLE memory (
    id INTEGER PRIMARY KEY,
    scope_key TEXT NOT NULL,
    content TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '',
    created_by TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL
);
CREATE VIRTUAL TABLE memory_fts USING fts5 (content, tags, content='memory', content_rowid='id');
CREATE TRIGGER memory_ai AFTER INSERT ON memory BEGIN
    INSERT INTO memory_fts (rowid, content, tags) VALUES (new.id, new.content, new.tags);
END;
CREATE TRIGGER memory_ad AFTER DELETE ON memory BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, content, tags) VALUES ('delete', old.id, old.content, old.tags);
END;

CREATE TABLE schedules (
    id TEXT PRIMARY KEY,
    spec TEXT NOT NULL,                 -- JSON of the job definition
    next_run_at REAL,
    last_run_at REAL,
    enabled INTEGER NOT NULL DEFAULT 1,
    created_at REAL NOT NULL
);
CREATE INDEX schedules_due ON schedules (enabled, next_run_at);
