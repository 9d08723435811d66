-- Purpose: the slowest requests of a run, with what happened to them: nodes visited,
--   interruptions and their causes, planned migrations, tokens recomputed, KV bytes moved.
--   `hazardserve tui --run RUN` (Request screen) shows the decisions behind each one.
-- Param run = '': the run id ('' for the latest run)
-- Param policy = hazard: the policy (as `compare` names it, e.g. hazard or fastest)
-- Param limit = 20: how many requests
-- Columns: run_id, policy, param, window, seed, request, completion_s, prompt_tokens, output_tokens, first_node, final_node, nodes_visited, interruptions, interruption_causes, planned_migrations, recomputed_tokens, kv_bytes_moved
WITH r AS (
    SELECT run_id FROM runs
    WHERE $run = '' OR run_id = $run
    ORDER BY created_at DESC, run_id DESC
    LIMIT 1
)
SELECT
    q.run_id, q.policy, q.param, q.window, q.seed, q.request,
    round(q.completion_s, 3) AS completion_s,
    q.prompt_tokens, q.output_tokens, q.first_node, q.final_node, q.nodes_visited,
    q.interruptions, q.interruption_causes, q.planned_migrations,
    (q.recomputed_unplanned_tokens + q.recomputed_planned_tokens) AS recomputed_tokens,
    q.kv_bytes_moved
FROM replay_requests q
JOIN r USING (run_id)
WHERE q.policy = $policy AND q.completion_s IS NOT NULL
ORDER BY q.completion_s DESC, q.window, q.seed, q.request, q.param
LIMIT $limit::INTEGER
