-- The change an approval's call makes, as the full view shows it (a unified diff, masked and
-- escaped), kept apart from full_text when it is longer than the card shows, so a full view
-- can send it as a .diff file (docs/approvals.md). Empty: no long diff, or a row from before.
ALTER TABLE approvals ADD COLUMN diff_text TEXT NOT NULL DEFAULT '';
