-- Parked turns (docs/approvals.md, "Parking and resumption"): a turn whose tool call waits
-- on an approval card keeps, from the moment the card is posted, what another process needs
-- to continue it once the card is decided. One row per card (approval_id); the turn's
-- inbox entry (channel, message_id) is 'parked' while the row is.
--
-- state: 'waiting' (the turn's coroutine still waits in its process), 'parked' (it ended;
-- its batch is in history with "waiting for approval" results), 'resuming' (claimed by the
-- replica in owner, with one conditional update, to run the resumption once).
-- version: the format of body (JSON: the turn's message, the batch of tool calls and which
-- of them were asked on which card); a release that cannot read a version expires the card.
-- owner: the replica that holds the row (NULL: one process).
CREATE TABLE parked_turns (
    approval_id TEXT PRIMARY KEY,
    turn_id TEXT NOT NULL,
    session_key TEXT NOT NULL,
    channel TEXT NOT NULL,
    message_id TEXT NOT NULL,
    requester TEXT NOT NULL,
    state TEXT NOT NULL,
    version INTEGER NOT NULL,
    body TEXT NOT NULL,
    owner TEXT,
    created_at REAL NOT NULL,
    parked_at REAL,
    updated_at REAL NOT NULL
);
CREATE INDEX parked_turns_session ON parked_turns (session_key);
CREATE INDEX parked_turns_state ON parked_turns (state);
