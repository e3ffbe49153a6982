"""Approval: policy, the gate the pipeline asks, handlers, grants and audit.

The daemon builds one :class:`bot.approval.service.ApprovalService`; consoles implement
:class:`bot.approval.terminal.TerminalPrompter`.
"""
