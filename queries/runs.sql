-- Every stored replay run, newest first.
SELECT run_id, nodes_source, workload_source, windows, seeds, cutoff_s
FROM runs
ORDER BY created_at DESC, run_id DESC
