-- Schema v5: how many times each model call was sent (retries included:
-- 0 = not recorded, read as 1), and whether an ask's answer is complete
-- ('' = complete; else why not, e.g. "the answer was cut off after 412
-- bytes").
ALTER TABLE nodes ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE asks ADD COLUMN incomplete TEXT NOT NULL DEFAULT '';
