-- Who let each tool call run, next to the call itself (the audit row has the decision and
-- its reason, but no call id): a person's id or 'operator:NAME' when a person approved it,
-- 'runtime' when the policy let a side-effecting call run without asking (grant,
-- auto_approve, full level), NULL when the call needed no approval or was never approved.

ALTER TABLE tool_calls ADD COLUMN approved_by TEXT;
