-- An approval card shows a summary; when the summary hides anything (a long value, many
-- arguments) the request may only be approved from a view that shows every character, so
-- the row keeps that full text (secret values masked) and whether the summary was cut.

ALTER TABLE approvals ADD COLUMN full_text TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN cut BIGINT NOT NULL DEFAULT 0;
