-- What each replica's release can do (docs/operations.md, "Several replicas"): the words it
-- advertises, space-separated, written with its row when it starts. 'park': it parks turns
-- waiting on an approval card and leaves parked ones alone (docs/approvals.md). A row of a
-- release before this column reads '' (it advertises nothing): while such a replica is
-- alive, the others do not park.
ALTER TABLE replicas ADD COLUMN capabilities TEXT NOT NULL DEFAULT '';
