-- Schema v2: questions asked of recorded model calls (inspect ask).
CREATE TABLE asks (
	id         INTEGER PRIMARY KEY,
	run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	node_seq   INTEGER NOT NULL,
	mode       TEXT NOT NULL,            -- question, replay, prompt
	question   TEXT NOT NULL DEFAULT '',
	answer     TEXT NOT NULL DEFAULT '',
	model      TEXT NOT NULL DEFAULT '',
	base_url   TEXT NOT NULL DEFAULT '',
	created_ns INTEGER NOT NULL
);
CREATE INDEX asks_node ON asks(run_id, node_seq);
