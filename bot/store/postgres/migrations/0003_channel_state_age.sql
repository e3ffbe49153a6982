-- When each per-channel state row was last written, so rows that only matter for a while
-- (the index of posted approval cards) can be pruned.

ALTER TABLE channel_state ADD COLUMN updated_at DOUBLE PRECISION NOT NULL DEFAULT 0;
CREATE INDEX channel_state_age ON channel_state (updated_at);
