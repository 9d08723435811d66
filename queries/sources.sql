-- Purpose: every source in the store with its counts, censoring shares and observation span.
-- Columns: source, adapter, kind, nodes, sessions, events, censored, left_truncated, requests, rejects, censored_share, left_truncated_share, time_base, observation_start, observation_end, span_days, ingested_at
SELECT
    source,
    adapter,
    kind,
    nodes,
    sessions,
    events,
    censored,
    left_truncated,
    requests,
    rejects,
    round(censored / greatest(sessions, 1), 4) AS censored_share,
    round(left_truncated / greatest(sessions, 1), 4) AS left_truncated_share,
    time_base,
    observation_start,
    observation_end,
    round((observation_end - observation_start) / 86400.0, 3) AS span_days,
    strftime(ingested_at, '%Y-%m-%dT%H:%M:%SZ') AS ingested_at
FROM sources
ORDER BY source
