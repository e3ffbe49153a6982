-- Several replicas over one database: session owners, and who took each inbox entry,
-- pending approval and due scheduled run (see the SQLite migration of the same number for
-- what each column holds). Times are epoch seconds, as in every table.
CREATE TABLE session_owners (
    session_key TEXT PRIMARY KEY,
    replica_id TEXT NOT NULL,
    since DOUBLE PRECISION NOT NULL
);
CREATE INDEX session_owners_replica ON session_owners (replica_id);

ALTER TABLE inbox ADD COLUMN replica_id TEXT;
ALTER TABLE approvals ADD COLUMN replica_id TEXT;
ALTER TABLE schedules ADD COLUMN claimed_by TEXT;
ALTER TABLE schedules ADD COLUMN claimed_until DOUBLE PRECISION;
