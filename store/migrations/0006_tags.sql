-- Schema v6: tags a team puts on runs (inspect tag RUN key=value), one
-- value per key and run, gone with the run.
CREATE TABLE tags (
	run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	key    TEXT NOT NULL,
	value  TEXT NOT NULL,
	PRIMARY KEY (run_id, key)
) WITHOUT ROWID;
