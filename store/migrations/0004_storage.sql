-- Schema v4: storage that grows with what is new.
--
-- A request's leading system message is a content-addressed blob of its own
-- (requests.system), out of the shared message chain: conversations of
-- different agents share the messages they have in common. Rows written
-- before keep their system message in the chain, as before, marked
-- system = -1 (the chain may start with it; 0 = no system message).
ALTER TABLE requests ADD COLUMN system INTEGER NOT NULL DEFAULT 0; -- blob id; 0 none; -1 in the chain
UPDATE requests SET system = -1;

-- Project files are blobs too: identical snapshots (the same agents.yaml
-- and prompts in run after run) are stored once. Each existing file's
-- content becomes a blob keyed by the SHA-256 of its bytes (computed here,
-- not taken from the row).
INSERT OR IGNORE INTO blobs (hash, data)
	SELECT inspect_sha256(CAST(content AS BLOB)), CAST(content AS BLOB) FROM project_files;
CREATE TABLE project_files_v4 (
	run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	path   TEXT NOT NULL,
	sha256 TEXT NOT NULL,
	blob   INTEGER NOT NULL REFERENCES blobs(id),
	PRIMARY KEY (run_id, path)
) WITHOUT ROWID;
INSERT INTO project_files_v4 (run_id, path, sha256, blob)
	SELECT p.run_id, p.path, p.sha256, b.id FROM project_files p
	JOIN blobs b ON b.hash = inspect_sha256(CAST(p.content AS BLOB));
DROP TABLE project_files;
ALTER TABLE project_files_v4 RENAME TO project_files;

-- Per-run totals for `inspect runs`, written when a run finishes (and for a
-- run whose writer died, by the next writer): listing runs costs runs, not
-- nodes. NULL totals_nodes = not written yet; readers sum the nodes then.
ALTER TABLE runs ADD COLUMN totals_nodes INTEGER;
ALTER TABLE runs ADD COLUMN totals_llm INTEGER;
ALTER TABLE runs ADD COLUMN totals_in INTEGER;
ALTER TABLE runs ADD COLUMN totals_out INTEGER;
ALTER TABLE runs ADD COLUMN totals_agents TEXT;    -- agents in order of first appearance, one a line
ALTER TABLE runs ADD COLUMN totals_last_end INTEGER; -- latest end of its nodes (ns)
UPDATE runs SET
	totals_nodes = (SELECT count(*) FROM nodes WHERE run_id = runs.id),
	totals_llm = (SELECT count(*) FROM nodes WHERE run_id = runs.id AND kind = 'llm'),
	totals_in = (SELECT total(min(max(tokens_in, 0), 1099511627776)) FROM nodes WHERE run_id = runs.id AND kind = 'llm'),
	totals_out = (SELECT total(min(max(tokens_out, 0), 1099511627776)) FROM nodes WHERE run_id = runs.id AND kind = 'llm'),
	totals_agents = coalesce((SELECT group_concat(agent, char(10)) FROM
		(SELECT agent, min(seq) s FROM nodes WHERE run_id = runs.id AND agent <> '' GROUP BY agent ORDER BY s)), ''),
	totals_last_end = (SELECT max(ended_ns) FROM nodes WHERE run_id = runs.id)
	WHERE status <> 'running';
