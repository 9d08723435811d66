-- Purpose: planned (pre-emptive) migrations of a run by policy, parameter point (overlap: the
--   destination prefills while the source decodes) and how the state moved: requests whose
--   KV cache was transferred, and requests that recomputed it on the destination.
-- Param run = '': the run id ('' for the latest run)
-- Columns: policy, param, requests_moved, migrations, by_transfer, by_recompute, kv_gb_moved, tokens_recomputed
WITH r AS (
    SELECT run_id FROM runs
    WHERE $run = '' OR run_id = $run
    ORDER BY created_at DESC, run_id DESC
    LIMIT 1
)
SELECT
    q.policy,
    q.param,
    count(*) AS requests_moved,
    sum(q.planned_migrations)::BIGINT AS migrations,
    count(*) FILTER (WHERE q.kv_bytes_moved > 0) AS by_transfer,
    count(*) FILTER (WHERE q.recomputed_planned_tokens > 0) AS by_recompute,
    round(sum(q.kv_bytes_moved) / 1e9, 3) AS kv_gb_moved,
    sum(q.recomputed_planned_tokens)::BIGINT AS tokens_recomputed
FROM replay_requests q
JOIN r USING (run_id)
WHERE q.planned_migrations > 0
GROUP BY ALL
ORDER BY q.policy, q.param
