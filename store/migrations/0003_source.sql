-- Schema v3: where a run came from (source), the fidelity of a stored
-- request, cache-write and reasoning usage, and the status exhausted.
-- SQLite cannot change a CHECK constraint in place, so runs is rebuilt (the
-- migration runs with foreign keys off, then checks them before committing).
CREATE TABLE runs_v3 (
	id             TEXT PRIMARY KEY,
	started_ns     INTEGER NOT NULL,
	ended_ns       INTEGER,
	status         TEXT NOT NULL CHECK (status IN ('running','ok','error','exhausted','cancelled','interrupted')),
	error          TEXT NOT NULL DEFAULT '',
	tasks          TEXT NOT NULL DEFAULT '[]',
	project        TEXT NOT NULL DEFAULT '',
	options        TEXT NOT NULL DEFAULT '{}',
	base_url       TEXT NOT NULL DEFAULT '',
	models         TEXT NOT NULL DEFAULT '[]',
	writer_host    TEXT NOT NULL DEFAULT '',
	writer_pid     INTEGER NOT NULL DEFAULT 0,
	writer_tag     TEXT NOT NULL DEFAULT '',
	source_format  TEXT NOT NULL DEFAULT 'inspect', -- inspect, or the importer's format
	source_version TEXT NOT NULL DEFAULT '',        -- the source tool's version
	source_id      TEXT NOT NULL DEFAULT '',        -- the source's own id (trace, session)
	source_path    TEXT NOT NULL DEFAULT ''         -- where it was read from
);
INSERT INTO runs_v3 (id, started_ns, ended_ns, status, error, tasks, project, options, base_url, models, writer_host, writer_pid, writer_tag)
	SELECT id, started_ns, ended_ns, status, error, tasks, project, options, base_url, models, writer_host, writer_pid, writer_tag FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v3 RENAME TO runs;
CREATE INDEX runs_started ON runs(started_ns);
CREATE INDEX runs_source ON runs(source_format, source_id) WHERE source_id <> '';

ALTER TABLE nodes ADD COLUMN tokens_cache_write INTEGER; -- NULL unless reported
ALTER TABLE nodes ADD COLUMN tokens_reasoning INTEGER;   -- NULL unless reported
ALTER TABLE nodes ADD COLUMN fidelity TEXT NOT NULL DEFAULT ''; -- llm: '' or exact, reconstructed
