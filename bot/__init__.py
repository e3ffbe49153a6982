"""hatchway — a chat-channel bot daemon.

The core package. It never imports ``channels``; adapters are found by name through
``bot.channel_registry``.
"""

__version__ = "0.1.0"
