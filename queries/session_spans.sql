-- Every up-session of one source (?1), left-truncated ones included, as clock intervals.
SELECT node_id, start, "end", event
FROM sessions
WHERE source = ?
