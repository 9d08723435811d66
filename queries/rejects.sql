-- The records of one source (?1) that could not be used, with file, line and reason.
SELECT file, line, reason, raw
FROM rejects
WHERE source = ?
ORDER BY file, line
