-- Purpose: what each source did not observe: censored sessions (still up when the observation
--   stopped: not failures), left-truncated sessions (already up when it started), and how many
--   nodes have a censored last session.
-- Param source = '': the source ('' for every availability source)
-- Columns: source, sessions, ended, censored, censored_share, left_truncated, truncated_share, nodes_censored_at_end
WITH last AS (
    SELECT source, node_id, arg_max(event, start) AS last_event
    FROM sessions GROUP BY ALL
)
SELECT
    s.source,
    count(*) AS sessions,
    sum(s.event)::BIGINT AS ended,
    (count(*) - sum(s.event))::BIGINT AS censored,
    round(1 - sum(s.event) / count(*), 4) AS censored_share,
    count(*) FILTER (WHERE s.left_truncated) AS left_truncated,
    round(count(*) FILTER (WHERE s.left_truncated) / count(*), 4) AS truncated_share,
    (SELECT count(*) FROM last l WHERE l.source = s.source AND l.last_event = 0)
        AS nodes_censored_at_end
FROM sessions s
WHERE $source = '' OR s.source = $source
GROUP BY s.source
ORDER BY s.source
