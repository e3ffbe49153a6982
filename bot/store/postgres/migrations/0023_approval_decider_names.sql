-- The display name of the person who decided an approval, as their platform reported it
-- with the press, reaction or reply (docs/approvals.md): cards show "name (id)". Shown, never
-- matched on. NULL: no name was reported, or a row decided before this migration (the card
-- shows the id alone).
ALTER TABLE approvals ADD COLUMN decided_by_name TEXT;
