-- Every up-session of one source (?1) in load order (node, session index), with what
-- the survival fits read.
SELECT node_id, start, "end", event, entry_s, left_truncated, end_cause, resolution_s
FROM sessions
WHERE source = ?
ORDER BY node_id, session_index
