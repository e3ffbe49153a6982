-- Replicas and leases: several processes over one database (see the SQLite migration of the
-- same number for what each column holds). Times are epoch seconds, as in every table.
CREATE TABLE replicas (
    id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started_at DOUBLE PRECISION NOT NULL,
    heartbeat_at DOUBLE PRECISION NOT NULL
);

CREATE TABLE leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_at DOUBLE PRECISION NOT NULL,
    generation BIGINT NOT NULL
);
CREATE INDEX leases_holder ON leases (holder);
