-- Schema v11: the runs still being written, by index. A writer starting a
-- run looks for runs whose writer died (to write their totals) among these
-- alone, not among every run: importing a file of many runs (an Agents SDK
-- or OTLP file, a run a trace) costs each run its own rows, not a read of
-- all the runs before it.
CREATE INDEX runs_running ON runs(id) WHERE status = 'running';
