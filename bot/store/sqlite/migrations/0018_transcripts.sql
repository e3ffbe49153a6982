-- Voice notes transcribed before their turn (docs/attachments.md, "Voice notes").
--
-- inbox.transcripts: JSON object of the message's transcribed audio, by the attachment's
-- position in the envelope: {"0": {"text": ..., "duration_s": ..., "provider": ...,
-- "model": ...}}, so a message run again after a crash does not pay for them twice.
ALTER TABLE inbox ADD COLUMN transcripts TEXT;
-- usage.audio_seconds: the seconds of audio a transcription call read (0 for model calls).
ALTER TABLE usage ADD COLUMN audio_seconds REAL NOT NULL DEFAULT 0;
