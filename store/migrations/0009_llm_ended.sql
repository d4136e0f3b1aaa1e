-- Schema v9: llm nodes by their end, so that a
-- command about one model call (inspect show's prompt-cache section) finds
-- the earlier calls that ended within the cache lifetime before it starts
-- by index, not by reading every earlier node of a large run.
CREATE INDEX nodes_llm_ended ON nodes(run_id, ended_ns) WHERE kind = 'llm';
