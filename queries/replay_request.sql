-- One stored request of a run (?1), policy (?2), parameter point (?3), window (?4), seed (?5)
-- and index in its run (?6).
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
WHERE run_id = ? AND policy = ? AND param = ? AND "window" = ? AND seed = ? AND request = ?
