-- The admin web console: sign-in links, sessions and the counters that rate-limit sign-ins.
--
-- No secret is stored in a form that lets a reader of the database use it: a sign-in link's
-- token, the code sent with it and a session's cookie are kept as SHA-256 digests (hex).
-- web_sign_ins: one row per link sent (or printed by `hatchway web login-link`); it signs in
-- once (used_at set by a conditional update) and only before expires_at. code_hash is the
-- digest of the code together with the nonce of the browser that asked for it, so the short
-- code works only in that browser; NULL for a link printed at the host.
CREATE TABLE web_sign_ins (
    token_hash TEXT PRIMARY KEY,
    code_hash TEXT,
    identity TEXT NOT NULL,        -- <kind>:<user id>, e.g. telegram:12345
    created_at DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    used_at DOUBLE PRECISION
);
CREATE INDEX web_sign_ins_code ON web_sign_ins (code_hash);
CREATE INDEX web_sign_ins_age ON web_sign_ins (expires_at);

-- web_sessions: a signed-in browser. It ends at sign-out, after web.session_idle_s without a
-- request (last_seen), or at expires_at (web.session_max_s after sign-in), whichever is first.
CREATE TABLE web_sessions (
    id_hash TEXT PRIMARY KEY,
    identity TEXT NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    last_seen DOUBLE PRECISION NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX web_sessions_identity ON web_sessions (identity);
CREATE INDEX web_sessions_age ON web_sessions (last_seen);

-- web_rate_counters: fixed windows counting sign-in requests per target identity
-- ('target:<identity>') and per client address ('client:<address>').
CREATE TABLE web_rate_counters (
    bucket TEXT PRIMARY KEY,
    window_start DOUBLE PRECISION NOT NULL,
    count BIGINT NOT NULL
);
