-- The time base, kind and observation span of one source (?1).
SELECT time_base, kind, observation_start, observation_end
FROM sources
WHERE source = ?
