-- Purpose: churn per node: up-sessions per observed day, the mean observed up time (censored
--   sessions at their observed length, so it is a lower bound where many are censored) and the
--   mean down time between consecutive sessions.
-- Param source: the availability source
-- Columns: node_id, sessions, observed_days, sessions_per_day, mean_up_s, mean_down_s, censored
WITH s AS (
    SELECT node_id, start, "end", duration_s, event,
        lead(start) OVER (PARTITION BY node_id ORDER BY start) - "end" AS down_s
    FROM sessions WHERE source = $source
)
SELECT
    n.node_id,
    count(s.node_id) AS sessions,
    round((n.observed_to - n.observed_from) / 86400.0, 3) AS observed_days,
    round(count(s.node_id) / nullif((n.observed_to - n.observed_from) / 86400.0, 0), 3)
        AS sessions_per_day,
    round(avg(s.duration_s), 1) AS mean_up_s,
    round(avg(s.down_s), 1) AS mean_down_s,
    (count(s.node_id) - coalesce(sum(s.event), 0))::BIGINT AS censored
FROM nodes n
LEFT JOIN s ON s.node_id = n.node_id
WHERE n.source = $source
GROUP BY n.node_id, n.observed_from, n.observed_to
ORDER BY sessions_per_day DESC NULLS LAST, n.node_id
