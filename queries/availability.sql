-- Purpose: availability of a source: the share of observed time with at least k nodes up, per
--   zone and pooled (zone "(all)"). A zone is observed from its first node's observation start
--   to its last node's observation end; time outside that span is not in the denominator. For
--   count sources (k-of-N probes) each probed slot is a node, so any threshold is this query.
-- Param source: the availability source
-- Param k = 1: at least this many nodes up
-- Columns: zone, nodes, k, available_share, observed_days
WITH s AS (
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
)
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
ORDER BY o.zone = '(all)', o.zone
