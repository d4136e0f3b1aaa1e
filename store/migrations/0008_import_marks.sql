-- Schema v8: how far an import from a trace backend has come (inspect
-- import --from jaeger URL), one row per source and query: what the
-- importer keeps to resume (a JSON object of its own), never a secret.
CREATE TABLE import_marks (
	source     TEXT PRIMARY KEY,
	mark       TEXT NOT NULL,
	updated_ns INTEGER NOT NULL
) WITHOUT ROWID;
