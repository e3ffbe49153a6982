"""Approval: policy, the gate the pipeline asks, handlers, grants and audit."""
