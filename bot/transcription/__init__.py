"""Voice notes and audio files turned into text before their turn (docs/attachments.md).

``base.py`` the values and the :class:`~bot.transcription.base.Transcriber` protocol;
``audio.py`` what a file is and how long it plays, read from its first and last bytes;
``openai_api.py`` an OpenAI-compatible ``/audio/transcriptions`` endpoint on the model's retry
ladder; ``embedded.py`` the offline engine, PocketSphinx, run by ``embedded_child.py`` in a
limited child process, one at a time; ``chain.py`` the configured providers tried in turn;
``kept.py`` transcripts kept with the inbox entry; ``voice.py`` :class:`VoiceNotes`, what the
turn runner calls; ``lines.py`` what the model and the user read; ``echo.py`` the transcript
posted back through the outbox ledger, once.
"""
