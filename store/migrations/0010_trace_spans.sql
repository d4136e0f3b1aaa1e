-- Schema v10: the spans an OTLP receiver (inspect collect, serve --otlp)
-- took, per run in flight (otlp.RunKey: its trace, or a Claude Code
-- session's traces), as OTLP/protobuf batches with their texts redacted:
-- a span that comes after its run left memory, or after a restart, is read
-- with the rest of its run, and the run is rebuilt from them all instead
-- of from the late span alone. Dropped once a trace is done (ended and
-- idle; a Claude Code session keeps them for its next prompt), and with
-- its run.
CREATE TABLE trace_spans (
	id        INTEGER PRIMARY KEY,
	source_id TEXT NOT NULL,  -- the run's source id (otlp.RunKey)
	data      BLOB NOT NULL   -- an ExportTraceServiceRequest (otel.EncodeSpans)
);
CREATE INDEX trace_spans_source ON trace_spans(source_id, id);
