-- The outbox ledger: each reply a turn sends (its answer, the failure line, the notice to
-- ask again) is written before the send and completed after it, with the platform's
-- message ids, so start-up recovery knows what was already delivered.
CREATE TABLE outbox (
    id INTEGER PRIMARY KEY,
    channel TEXT NOT NULL,              -- the inbox entry answered (kind.alias)
    message_id TEXT NOT NULL,           -- the inbox entry's platform message id
    kind TEXT NOT NULL,                 -- answer | failure | notice
    reply_key TEXT NOT NULL,            -- names the reply on the platform (metadata, nonce)
    target TEXT NOT NULL,               -- JSON of the delivery target
    body TEXT NOT NULL,                 -- the text sent
    status TEXT NOT NULL,               -- sending | sent | failed
    sent_ids TEXT NOT NULL DEFAULT '[]', -- JSON list of the platform message ids posted
    error TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    UNIQUE (channel, message_id, kind)
);
CREATE INDEX outbox_status ON outbox (status);

-- Which run of the turn began (its turn id), how many runs began, and whether a tool with
-- side effects may have run in the last one (agent.on_interrupted = "retry").
ALTER TABLE inbox ADD COLUMN turn_id TEXT;
ALTER TABLE inbox ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE inbox ADD COLUMN side_effects INTEGER NOT NULL DEFAULT 0;
