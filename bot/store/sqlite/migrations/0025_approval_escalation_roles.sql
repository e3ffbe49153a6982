-- Escalation to approver roles, and the approvers a card names (docs/approvals.md):
-- escalated_roles is the JSON list of the roles (approval.escalate_to_roles) whose holders
-- may decide the request since it was escalated; approvers_named the JSON list of the user
-- ids (and "role:NAME" entries) the card and the requester's notice name as able to approve
-- it, chosen when it was asked (approval.name_approvers). NULL: none, or a row written before
-- this migration (its card names nobody).
ALTER TABLE approvals ADD COLUMN escalated_roles TEXT;
ALTER TABLE approvals ADD COLUMN approvers_named TEXT;
