-- Purpose: the records of one source that ingest rejected, with the file, line and reason.
-- Param source: the source
-- Columns: file, line, reason, raw
SELECT file, line, reason, raw
FROM rejects
WHERE source = $source
ORDER BY file, line
