-- Several replicas over one database (PostgreSQL; on SQLite, one process, these columns stay
-- NULL and session_owners empty).
--
-- session_owners: the replica that runs each session's turns, one at a time and in inbox
-- order. A message admitted by another replica is handed over to it through the inbox. The
-- owner's liveness is its replica's lease (table replicas); a session whose owner is gone is
-- taken over by the next replica that needs it.
CREATE TABLE session_owners (
    session_key TEXT PRIMARY KEY,
    replica_id TEXT NOT NULL,
    since REAL NOT NULL                 -- when this replica took the session (epoch seconds)
);
CREATE INDEX session_owners_replica ON session_owners (replica_id);

-- The replica that took an inbox entry to run it (NULL: not taken yet, or one process):
-- recovery settles only the entries of replicas that are gone.
ALTER TABLE inbox ADD COLUMN replica_id TEXT;

-- The replica whose turn waits on a pending approval: a start expires only the pending
-- approvals of replicas that are gone, never a live one's.
ALTER TABLE approvals ADD COLUMN replica_id TEXT;

-- A due run claimed by one replica (until claimed_until, epoch seconds), so that each
-- occurrence is delivered by one of them.
ALTER TABLE schedules ADD COLUMN claimed_by TEXT;
ALTER TABLE schedules ADD COLUMN claimed_until REAL;
