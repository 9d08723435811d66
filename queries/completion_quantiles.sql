-- Per policy and parameter point of one replay run (?1): requests, completed requests and the
-- completion-time quantiles at the levels 0, 0.02, ..., 1, one row per level (`level_index`
-- 0..50, `completion_s` a number; one row with a NULL quantile when nothing completed).
WITH g AS (
    SELECT
        policy,
        param,
        count(*) AS requests,
        count(completion_s) AS completed,
        coalesce(
            quantile_cont(completion_s, [0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.14, 0.16, 0.18, 0.2, 0.22, 0.24, 0.26, 0.28, 0.3, 0.32, 0.34, 0.36, 0.38, 0.4, 0.42, 0.44, 0.46, 0.48, 0.5, 0.52, 0.54, 0.56, 0.58, 0.6, 0.62, 0.64, 0.66, 0.68, 0.7, 0.72, 0.74, 0.76, 0.78, 0.8, 0.82, 0.84, 0.86, 0.88, 0.9, 0.92, 0.94, 0.96, 0.98, 1]),
            [NULL::DOUBLE]
        ) AS qs
    FROM replay_requests
    WHERE run_id = ?
    GROUP BY policy, param
)
SELECT policy, param, requests, completed, unnest(range(len(qs))) AS level_index, unnest(qs) AS completion_s
FROM g
ORDER BY policy, param, level_index
