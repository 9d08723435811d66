-- Purpose: availability of a source: the share of observed time with at least k nodes up, per
--   zone and pooled (zone "(all)"). For count sources (k-of-N probes, whose raw samples are in
--   the `observations` table) it is the share of each series' observed ticks with a count of at
--   least k, whatever threshold the source was ingested with. Otherwise a zone is observed from
--   its first node's observation start to its last node's observation end, and time outside
--   that span is not in the denominator.
-- Param source: the availability source
-- Param k = 1: at least this many nodes (for count sources: instances) up
-- Columns: zone, nodes, k, available_share, observed_days
WITH counted AS (
    SELECT coalesce(n.zone, o.node_id) AS zone, o.node_id, o.t, o.count, o.dt
    FROM observations o
    LEFT JOIN nodes n ON n.source = o.source AND n.node_id = o.node_id
    WHERE o.source = $source
), counted_all AS (
    SELECT zone, node_id, t, count, dt FROM counted
    UNION ALL SELECT '(all)', node_id, t, count, dt FROM counted
), by_count AS (
    SELECT
        zone,
        count(DISTINCT node_id)::BIGINT AS nodes,
        $k::INTEGER AS k,
        round(sum(dt) FILTER (WHERE count >= $k::INTEGER) / sum(dt), 4) AS available_share,
        round((max(t + dt) - min(t)) / 86400.0, 3) AS observed_days
    FROM counted_all
    GROUP BY zone
), s AS (
    SELECT coalesce(n.zone, '(none)') AS zone, s.start, s."end"
    FROM sessions s
    JOIN nodes n ON n.source = s.source AND n.node_id = s.node_id
    WHERE s.source = $source
), obs AS (
    SELECT coalesce(zone, '(none)') AS zone, min(observed_from) AS t0, max(observed_to) AS t1,
        count(*) AS n
    FROM nodes WHERE source = $source GROUP BY ALL
), obs_all AS (
    SELECT zone, t0, t1, n FROM obs
    UNION ALL SELECT '(all)', min(t0), max(t1), sum(n) FROM obs
), ev AS (
    SELECT zone, start AS t, 1 AS d FROM s
    UNION ALL SELECT zone, "end", -1 FROM s
), ev_all AS (
    SELECT zone, t, d FROM ev UNION ALL SELECT '(all)', t, d FROM ev
), steps AS (
    SELECT zone, t, sum(d) AS d FROM ev_all GROUP BY ALL
), up AS (
    SELECT zone, t,
        sum(d) OVER (PARTITION BY zone ORDER BY t) AS up,
        lead(t) OVER (PARTITION BY zone ORDER BY t) AS t_next
    FROM steps
), by_session AS (
    SELECT
    o.zone,
    o.n::BIGINT AS nodes,
    $k::INTEGER AS k,
    round(coalesce(sum(least(u.t_next, o.t1) - greatest(u.t, o.t0))
        FILTER (WHERE u.up >= $k::INTEGER AND u.t_next > o.t0 AND u.t < o.t1), 0)
        / nullif(o.t1 - o.t0, 0), 4) AS available_share,
    round((o.t1 - o.t0) / 86400.0, 3) AS observed_days
FROM obs_all o
LEFT JOIN up u ON u.zone = o.zone
GROUP BY o.zone, o.n, o.t0, o.t1
)
SELECT zone, nodes, k, coalesce(available_share, 0.0) AS available_share, observed_days
FROM by_count
UNION ALL
SELECT zone, nodes, k, available_share, observed_days
FROM by_session
WHERE NOT EXISTS (SELECT 1 FROM counted)
ORDER BY zone = '(all)', zone
