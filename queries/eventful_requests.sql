-- The most eventful stored requests of one policy (?2) and parameter point (?3) of a run (?1):
-- most interruptions and migrations first, then the slowest (unfinished first); at most ?4.
SELECT
    "window",
    seed,
    request,
    request_id,
    arrival_s,
    prompt_tokens,
    output_tokens,
    first_node,
    final_node,
    nodes_visited,
    ttft_s,
    completion_s,
    interruptions,
    planned_migrations,
    slo_met,
    dropped
FROM replay_requests
WHERE run_id = ? AND policy = ? AND param = ?
ORDER BY
    interruptions + planned_migrations DESC,
    completion_s DESC NULLS FIRST,
    "window",
    seed,
    request
LIMIT ?
