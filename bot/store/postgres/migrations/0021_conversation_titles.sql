-- conversation_titles: the latest title of each conversation (and Discord thread) the bot
-- was written to in, as the platform gave it (a Slack channel's name, a Discord channel's
-- or thread's, a Telegram group's title; format characters kept: the console cleans them
-- when it shows a title), by place: <kind>.<alias>:<conversation id>, and for a thread
-- <kind>.<alias>:<conversation id>:<thread id>, as a session key starts. Shown beside the
-- id, never matched on. hatchway forget removes a conversation's rows (and those of a
-- forgotten person's direct conversations); retention removes rows not seen for
-- retention.inbox_days.
CREATE TABLE conversation_titles (
    place TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    seen_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX conversation_titles_seen ON conversation_titles (seen_at);
