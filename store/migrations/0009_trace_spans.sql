-- Schema v9: the spans an OTLP receiver (inspect collect, serve --otlp)
-- took, per trace in flight, as OTLP/protobuf batches with their texts
-- redacted: a span that comes after its trace left memory, or after a
-- restart, is read with the rest of its trace, and the run is rebuilt from
-- them all instead of from the late span alone. Dropped once the trace is
-- done (ended and idle), and with its run.
CREATE TABLE trace_spans (
	id       INTEGER PRIMARY KEY,
	trace_id TEXT NOT NULL,  -- hex, the run's source id
	data     BLOB NOT NULL   -- an ExportTraceServiceRequest (otel.EncodeSpans)
);
CREATE INDEX trace_spans_trace ON trace_spans(trace_id, id);
