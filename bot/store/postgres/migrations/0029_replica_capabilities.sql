-- What each replica's release can do (see the SQLite migration of the same number).
ALTER TABLE replicas ADD COLUMN capabilities TEXT NOT NULL DEFAULT '';
