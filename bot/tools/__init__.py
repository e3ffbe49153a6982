"""Tools and the tool-execution pipeline (see docs/tools.md and pipeline.md)."""
