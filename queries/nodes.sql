-- The nodes of one source (?1) with their attributes and session counts. `median_up_s` is a
-- placeholder that `hazardserve nodes` replaces by each node's Kaplan-Meier median (a plain
-- median of durations would treat censored sessions as ends).
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
WHERE n.source = ?
GROUP BY ALL
ORDER BY n.node_id
