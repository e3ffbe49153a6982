-- The console's sign-in: the clients each identity signed in from, so that a request of its
-- own from one of them is never refused because others asked for its links.
--
-- web_known_clients: one row per (identity, client) that signed in, last_used the latest
-- time. client is 'addr:' and the SHA-256 digest (hex) of the client address, or 'browser:'
-- and the digest of the random value of the browser's hatchway_console_known cookie. Rows
-- older than the console's KNOWN_FOR_S are pruned.
CREATE TABLE web_known_clients (
    identity TEXT NOT NULL,        -- <kind>:<user id>, e.g. telegram:12345
    client TEXT NOT NULL,
    last_used REAL NOT NULL,
    PRIMARY KEY (identity, client)
);
CREATE INDEX web_known_clients_age ON web_known_clients (last_used);
