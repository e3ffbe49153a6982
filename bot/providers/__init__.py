"""LLM providers behind one small ``Provider`` protocol (see :mod:`bot.providers.base`)."""
