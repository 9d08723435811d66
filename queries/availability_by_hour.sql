-- Purpose: when nodes of a UTC source are up: the share of observed node-time up per UTC hour
--   of day (by = hour) or day of week (by = weekday). Node-time is observed from a node's
--   observation start to its end; sources on a relative clock have no hours (no rows).
-- Param source: the availability source (on a UTC clock)
-- Param by = hour: hour (00 to 23) or weekday (Monday to Sunday)
-- Columns: bucket, up_node_hours, observed_node_hours, up_share
WITH utc AS (
    SELECT source FROM sources WHERE source = $source AND time_base = 'utc'
), up AS (
    SELECT s.start, s."end", h
    FROM sessions s
    JOIN utc USING (source),
    LATERAL unnest(generate_series(
        date_trunc('hour', make_timestamp((s.start * 1e6)::BIGINT)),
        make_timestamp((s."end" * 1e6)::BIGINT),
        INTERVAL 1 HOUR)) AS g(h)
), obs AS (
    SELECT n.observed_from AS start, n.observed_to AS "end", h
    FROM nodes n
    JOIN utc USING (source),
    LATERAL unnest(generate_series(
        date_trunc('hour', make_timestamp((n.observed_from * 1e6)::BIGINT)),
        make_timestamp((n.observed_to * 1e6)::BIGINT),
        INTERVAL 1 HOUR)) AS g(h)
), parts AS (
    SELECT h, least("end", epoch(h) + 3600) - greatest(start, epoch(h)) AS up_s, 0.0 AS obs_s
    FROM up
    UNION ALL
    SELECT h, 0.0, least("end", epoch(h) + 3600) - greatest(start, epoch(h)) FROM obs
)
SELECT
    CASE WHEN $by = 'weekday' THEN dayname(h) ELSE lpad(hour(h)::VARCHAR, 2, '0') END AS bucket,
    round(sum(greatest(up_s, 0)) / 3600, 1) AS up_node_hours,
    round(sum(greatest(obs_s, 0)) / 3600, 1) AS observed_node_hours,
    round(sum(greatest(up_s, 0)) / nullif(sum(greatest(obs_s, 0)), 0), 4) AS up_share
FROM parts
GROUP BY ALL
ORDER BY CASE WHEN $by = 'weekday' THEN isodow(min(h)) ELSE hour(min(h)) END
