-- Schema v12: nodes_llm_ended holds the llm nodes that have ended, not the
-- open ones (ended_ns NULL). Recording a model call then writes the index
-- once, when the call ends, instead of an entry among the open calls at
-- its start and a move at its end: a database page fewer in the start's
-- commit and in the finish's (BenchmarkRecordLLMParts, record-pages). Its
-- reader (CallWindow) asks for a range of ends, which an open call has not.
DROP INDEX nodes_llm_ended;
CREATE INDEX nodes_llm_ended ON nodes(run_id, ended_ns) WHERE kind = 'llm' AND ended_ns IS NOT NULL;
