-- Replicas and leases: several processes over one (PostgreSQL) database.
--
-- replicas: one row per running process, written when it starts and every heartbeat
-- ([replicas] heartbeat_s) while it runs, deleted when it stops cleanly. A row whose
-- heartbeat is older than the lease TTL belongs to a process that died or lost the database.
CREATE TABLE replicas (
    id TEXT PRIMARY KEY,                -- <host>:<pid>:<random>, new at every start
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started_at REAL NOT NULL,           -- wall clock (epoch seconds)
    heartbeat_at REAL NOT NULL          -- wall clock of the last heartbeat
);

-- leases: a role only one process may hold at a time (telegram.<alias>.poll,
-- discord.<alias>.gateway). Taken with one conditional upsert when free or expired, renewed
-- by its holder's heartbeat, released by setting expires_at to 0. A row is never deleted, so
-- generation (the fencing token) only grows: each new tenure of the role gets the next one.
CREATE TABLE leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,               -- replicas.id of the holder
    expires_at REAL NOT NULL,           -- wall clock; free once it has passed
    generation INTEGER NOT NULL         -- 1 for the first tenure, one more for each new one
);
CREATE INDEX leases_holder ON leases (holder);
