-- Purpose: the nodes of one source with their attributes and session counts. `median_up_s` is a
--   placeholder that `hazardserve nodes` fills with each node's Kaplan-Meier median (a plain
--   median of durations would treat censored sessions as ends).
-- Param source: the source
-- Columns: node_id, zone, instance_type, node_group, sessions, events, median_up_s, observed_from, observed_to
SELECT
    n.node_id,
    n.zone,
    n.instance_type,
    n.node_group,
    count(s.node_id) AS sessions,
    coalesce(sum(s.event), 0)::BIGINT AS events,
    NULL::DOUBLE AS median_up_s,
    n.observed_from,
    n.observed_to
FROM nodes n
LEFT JOIN sessions s ON s.source = n.source AND s.node_id = n.node_id
WHERE n.source = $source
GROUP BY ALL
ORDER BY n.node_id
