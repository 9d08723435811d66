-- The number of stored requests of one policy (?2) and parameter point (?3) of a run (?1).
SELECT count(*)
FROM replay_requests
WHERE run_id = ? AND policy = ? AND param = ?
