-- The most recent sweep.
SELECT sweep_id
FROM sweeps
ORDER BY created_at DESC, sweep_id DESC
LIMIT 1
