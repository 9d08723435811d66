-- The most recent replay run.
SELECT run_id
FROM runs
ORDER BY created_at DESC, run_id DESC
LIMIT 1
