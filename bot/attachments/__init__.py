"""Files users send: downloaded when their turn starts, read by content, shown to the model.

:mod:`~bot.attachments.images` makes an image fit for every provider; the other modules
download (:mod:`~bot.attachments.download`), classify (:mod:`~bot.attachments.kinds`), read
text and PDFs, and build the user message's lines (:mod:`~bot.attachments.ingest`);
:mod:`~bot.attachments.retention` deletes files older than ``attachments.keep_days``. The
rows live in :mod:`bot.store.attachments`. See docs/attachments.md.
"""
