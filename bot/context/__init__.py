"""What the bot knows of the conversation it is in, besides its own session's history.

Two sources, both off by default (``[channels.<kind>.<alias>.context]``, docs/context.md):

* **group context** (:mod:`~bot.context.keeping`): in an allowed group conversation, the
  messages not addressed to the bot are kept for context only, a bounded window per
  conversation in the database (:mod:`bot.store.context_lines`); never answered;
* **thread history** (:mod:`~bot.context.threads`): mentioned in a thread, the bot reads the
  thread's earlier messages back from the platform (:class:`bot.channel.ThreadHistory`),
  once per thread, cached.

:class:`~bot.context.conversation.ConversationContext` gathers both for a turn, and
:func:`~bot.context.block.context_block` writes them for the model as other participants'
words inside an untrusted-data block (:mod:`bot.untrusted`), never as instructions.
"""

from bot.context.block import context_block, viewing_block
from bot.context.conversation import ConversationContext
from bot.context.keeping import GroupContextKeeper

__all__ = ["ConversationContext", "GroupContextKeeper", "context_block", "viewing_block"]
