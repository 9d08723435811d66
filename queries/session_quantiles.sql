-- Purpose: session lengths by source and node group: how many sessions, how many ended (the
--   rest are censored: still up when the observation stopped, never counted as ends), and the
--   quantiles of the ended ones. For medians that account for censoring use `hazardserve fit`.
-- Param source = '': the source ('' for every source)
-- Param by = zone: the group: zone, instance_type, node_group or source (one row per source)
-- Columns: source, grp, sessions, ended, censored_share, p10_ended_s, p50_ended_s, p90_ended_s, longest_observed_s
SELECT
    s.source,
    coalesce(CASE $by
        WHEN 'zone' THEN n.zone
        WHEN 'instance_type' THEN n.instance_type
        WHEN 'node_group' THEN n.node_group
        ELSE '' END, '') AS grp,
    count(*) AS sessions,
    sum(s.event)::BIGINT AS ended,
    round(1 - sum(s.event) / count(*), 4) AS censored_share,
    round(quantile_cont(s.duration_s, 0.1) FILTER (WHERE s.event = 1), 1) AS p10_ended_s,
    round(quantile_cont(s.duration_s, 0.5) FILTER (WHERE s.event = 1), 1) AS p50_ended_s,
    round(quantile_cont(s.duration_s, 0.9) FILTER (WHERE s.event = 1), 1) AS p90_ended_s,
    max(s.duration_s) AS longest_observed_s
FROM sessions s
LEFT JOIN nodes n ON n.source = s.source AND n.node_id = s.node_id
WHERE $source = '' OR s.source = $source
GROUP BY ALL
ORDER BY ALL
