-- Schema v7: the llm node whose response made a call (tool, fork and
-- handoff nodes: record.Node.CalledBy, the seq of that node); 0 = not
-- recorded, as every node of an older file reads.
ALTER TABLE nodes ADD COLUMN called_by INTEGER NOT NULL DEFAULT 0;
