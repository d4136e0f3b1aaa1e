-- Schema v1: runs, their project snapshots, nodes and exact requests.
CREATE TABLE runs (
	id          TEXT PRIMARY KEY,
	started_ns  INTEGER NOT NULL,
	ended_ns    INTEGER,
	status      TEXT NOT NULL CHECK (status IN ('running','ok','error','cancelled','interrupted')),
	error       TEXT NOT NULL DEFAULT '',
	tasks       TEXT NOT NULL DEFAULT '[]',  -- JSON array of strings
	project     TEXT NOT NULL DEFAULT '',    -- the project folder's base name
	options     TEXT NOT NULL DEFAULT '{}',  -- JSON object
	base_url    TEXT NOT NULL DEFAULT '',
	models      TEXT NOT NULL DEFAULT '[]',  -- JSON array of strings
	writer_host TEXT NOT NULL DEFAULT '',    -- who writes it, to tell a dead writer
	writer_pid  INTEGER NOT NULL DEFAULT 0,
	writer_tag  TEXT NOT NULL DEFAULT ''     -- the writer process's start time, so a reused pid is not mistaken for it
);
CREATE INDEX runs_started ON runs(started_ns);

CREATE TABLE project_files (
	run_id  TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	path    TEXT NOT NULL,
	sha256  TEXT NOT NULL,
	content TEXT NOT NULL,
	PRIMARY KEY (run_id, path)
) WITHOUT ROWID;

CREATE TABLE nodes (
	id            INTEGER PRIMARY KEY,
	run_id        TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	seq           INTEGER NOT NULL,
	kind          TEXT NOT NULL,
	branch        TEXT NOT NULL DEFAULT '',
	fork_seq      INTEGER NOT NULL DEFAULT 0,
	agent         TEXT NOT NULL DEFAULT '',
	depth         INTEGER NOT NULL DEFAULT 0,
	started_ns    INTEGER NOT NULL,
	ended_ns      INTEGER,
	status        TEXT NOT NULL,
	error         TEXT NOT NULL DEFAULT '',
	name          TEXT NOT NULL DEFAULT '',  -- llm: model; tool: tool name
	calls         TEXT NOT NULL DEFAULT '',  -- llm: called names, space-separated
	call_id       TEXT NOT NULL DEFAULT '',  -- tool: the model's call id
	tokens_in     INTEGER NOT NULL DEFAULT 0,
	tokens_out    INTEGER NOT NULL DEFAULT 0,
	tokens_cached INTEGER,                   -- NULL unless reported
	research      INTEGER NOT NULL DEFAULT 0,
	args          TEXT NOT NULL DEFAULT '',  -- tool: arguments JSON
	text          TEXT NOT NULL DEFAULT '',  -- user/final: message; tool: result; llm: content
	data          TEXT NOT NULL DEFAULT '',  -- handoff/fork/join: JSON payload
	UNIQUE (run_id, seq)
);

-- Content-addressed heads and tails of request bodies (model, tools, options):
-- each distinct byte string once.
CREATE TABLE blobs (
	id   INTEGER PRIMARY KEY,
	hash BLOB NOT NULL UNIQUE,  -- SHA-256 of data
	data BLOB NOT NULL
);

-- A persistent list of messages: a request's messages are the chain ending at
-- its last message, so a conversation's requests share every earlier link and
-- each message is stored once per distinct history it follows.
CREATE TABLE chain (
	id   INTEGER PRIMARY KEY,
	prev INTEGER NOT NULL,      -- 0 = first message
	hkey INTEGER NOT NULL,      -- first 8 bytes of SHA-256(data), for lookup
	data BLOB NOT NULL          -- the message bytes, with the separator before it
);
CREATE INDEX chain_lookup ON chain(prev, hkey);

-- The exact request body of an llm node = head || chain(last) || tail.
CREATE TABLE requests (
	node_id  INTEGER PRIMARY KEY REFERENCES nodes(id) ON DELETE CASCADE,
	head     INTEGER NOT NULL REFERENCES blobs(id),
	last     INTEGER NOT NULL,  -- chain id, 0 when the body has no message list
	tail     INTEGER NOT NULL REFERENCES blobs(id),
	size     INTEGER NOT NULL,
	sha256   BLOB NOT NULL,     -- of the whole body; proves the rebuild
	response BLOB               -- the response body, set when the call finishes
);
