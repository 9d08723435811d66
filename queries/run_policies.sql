-- Purpose: the policy comparison of a replay run, one row per policy and parameter point:
--   mean and p99 completion, unplanned interruptions and planned migrations per window (means
--   over windows; `hazardserve compare RUN` prints them with their intervals).
-- Param run = '': the run id ('' for the latest run)
-- Columns: run_id, position, policy, requests, mean_completion_s, p99_completion_s, unplanned_interruptions, planned_migrations
WITH r AS (
    SELECT run_id FROM runs
    WHERE $run = '' OR run_id = $run
    ORDER BY created_at DESC, run_id DESC
    LIMIT 1
)
SELECT
    s.run_id,
    s.position,
    s.policy,
    TRY_CAST(nullif(regexp_extract(s.summary, '"requests":([0-9]+)', 1), '') AS BIGINT) AS requests,
    round(TRY_CAST(nullif(regexp_extract(s.summary, '"mean_completion_s":([-0-9.eE+]+)', 1), '') AS DOUBLE), 3)
        AS mean_completion_s,
    round(TRY_CAST(nullif(regexp_extract(s.summary, '"p99_completion_s":([-0-9.eE+]+)', 1), '') AS DOUBLE), 3)
        AS p99_completion_s,
    round(TRY_CAST(nullif(regexp_extract(s.summary, '"unplanned_interruptions":([-0-9.eE+]+)', 1), '') AS DOUBLE), 3)
        AS unplanned_interruptions,
    round(TRY_CAST(nullif(regexp_extract(s.summary, '"planned_migrations":([-0-9.eE+]+)', 1), '') AS DOUBLE), 3)
        AS planned_migrations
FROM replay_summary s
JOIN r USING (run_id)
ORDER BY s.position
