-- Purpose: the up-sessions of one source, in canonical order.
-- Param source: the source
-- Columns: node_id, session_index, start, end, duration_s, event, end_cause, left_truncated, entry_s, resolution_s, start_utc, end_utc
SELECT
    node_id,
    session_index,
    start,
    "end",
    duration_s,
    event,
    end_cause,
    left_truncated,
    entry_s,
    resolution_s,
    strftime(start_utc, '%Y-%m-%dT%H:%M:%SZ') AS start_utc,
    strftime(end_utc, '%Y-%m-%dT%H:%M:%SZ') AS end_utc
FROM sessions
WHERE source = $source
ORDER BY node_id, session_index
