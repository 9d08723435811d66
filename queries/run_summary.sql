-- The comparison rows of one run (?1), in their order.
SELECT summary
FROM replay_summary
WHERE run_id = ?
ORDER BY position
