-- Two keys (docs/approvals.md, "Two keys for critical tools"): how many distinct approvers
-- a request needs (1: an ordinary request, as every row written before this migration
-- reads), and one row per approval counted toward it: who gave it (a platform user id or
-- operator:NAME; one vote per person and request, the primary key), the name their platform
-- sent, its place in the count (1 for the first), what they chose (approve or always), how
-- the answer came (click, web, cli) and when.
ALTER TABLE approvals ADD COLUMN quorum INTEGER NOT NULL DEFAULT 1;
CREATE TABLE approval_votes (
    approval_id TEXT NOT NULL,
    voter TEXT NOT NULL,
    voter_name TEXT,
    position INTEGER NOT NULL,
    choice TEXT NOT NULL,
    route TEXT NOT NULL,
    at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (approval_id, voter)
);
