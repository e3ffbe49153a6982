-- What each model call used: one row per call, written with the turn's own records (the tool
-- batch or the answer), so budgets, `hatchway usage` and a restart all read the same sums.
CREATE TABLE usage (
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,                   -- when the call returned (epoch seconds)
    turn_id TEXT NOT NULL,
    session_key TEXT NOT NULL,
    channel TEXT NOT NULL,              -- kind.alias
    conversation_id TEXT NOT NULL,
    user_id TEXT NOT NULL,              -- the sender's platform id (a scheduled run: its creator)
    agent TEXT NOT NULL,                -- the agent whose turn it was
    provider TEXT NOT NULL,             -- the configured provider that answered
    model TEXT NOT NULL,                -- the model the reply named (else the configured one)
    input_tokens INTEGER NOT NULL,      -- prompt tokens at the full price, cache excluded
    output_tokens INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    cache_read_tokens INTEGER NOT NULL,
    estimated INTEGER NOT NULL,         -- 1: the provider reported nothing, hatchway estimated
    latency_ms INTEGER NOT NULL,        -- the call as the turn waited for it (retries, fallback)
    cost REAL                           -- from [pricing]; NULL when the model has no price
);
CREATE INDEX usage_at ON usage (at);
CREATE INDEX usage_user ON usage (channel, user_id);
CREATE INDEX usage_conversation ON usage (channel, conversation_id);
CREATE INDEX usage_session ON usage (session_key);

-- The one notice per budget window and conversation: a turn refused because a budget is
-- used up answers only if its row goes in; later turns of that window stay quiet.
CREATE TABLE budget_notices (
    channel TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    budget TEXT NOT NULL,               -- which budget: user:<kind.alias> <id> day | ...
    window_start REAL NOT NULL,         -- epoch seconds of the window's start
    at REAL NOT NULL,
    turn_id TEXT NOT NULL,
    PRIMARY KEY (channel, conversation_id, budget, window_start)
);
