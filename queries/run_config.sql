-- The scenario configuration (TOML text) of one replay run (?1).
SELECT config
FROM runs
WHERE run_id = ?
