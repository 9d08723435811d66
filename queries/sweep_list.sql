-- Every stored sweep, oldest first.
SELECT sweep_id, created_at, cells
FROM sweeps
ORDER BY created_at, sweep_id
