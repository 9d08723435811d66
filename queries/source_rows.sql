-- Every source in the store with the counts and observation span the TUI's sources list shows.
SELECT
    source,
    adapter,
    kind,
    time_base,
    nodes,
    sessions,
    events,
    censored,
    left_truncated,
    requests,
    rejects,
    observation_start,
    observation_end
FROM sources
ORDER BY source
