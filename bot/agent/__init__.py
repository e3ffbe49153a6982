"""The agent turn: provider calls and tool calls until a final answer."""
