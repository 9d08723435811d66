-- Purpose: how sessions of a source end, by end cause and lifetime bucket (under 1 h, 1-6 h,
--   6-24 h, 1-7 days, over 7 days); censored sessions are their own cause ("censored"), never
--   a preemption.
-- Param source: the availability source
-- Columns: end_cause, lifetime, sessions, share
WITH s AS (
    SELECT
        CASE WHEN event = 0 THEN 'censored' ELSE end_cause END AS end_cause,
        CASE
            WHEN duration_s < 3600 THEN '1: < 1 h'
            WHEN duration_s < 6 * 3600 THEN '2: 1-6 h'
            WHEN duration_s < 86400 THEN '3: 6-24 h'
            WHEN duration_s < 7 * 86400 THEN '4: 1-7 d'
            ELSE '5: > 7 d'
        END AS lifetime
    FROM sessions WHERE source = $source
)
SELECT
    end_cause,
    lifetime,
    count(*) AS sessions,
    round(count(*) / sum(count(*)) OVER (), 4) AS share
FROM s
GROUP BY ALL
ORDER BY end_cause, lifetime
