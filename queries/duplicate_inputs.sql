-- Purpose: sources ingested from byte-identical input files (equal sha256): the same trace
--   under two names, or one file in two traces.
-- Columns: sha256, bytes, sources, paths
WITH f AS (
    SELECT
        source,
        unnest(regexp_extract_all(files, '"path":"((?:[^"\\]|\\.)*)"', 1)) AS path,
        unnest(regexp_extract_all(files, '"sha256":"([0-9a-f]+)"', 1)) AS sha256,
        unnest(regexp_extract_all(files, '"bytes":([0-9]+)', 1)) AS bytes
    FROM sources
)
SELECT
    sha256,
    max(bytes::BIGINT) AS bytes,
    string_agg(DISTINCT source, ', ' ORDER BY source) AS sources,
    string_agg(path, ', ' ORDER BY path) AS paths
FROM f
GROUP BY sha256
HAVING count(DISTINCT source) > 1
ORDER BY sources, sha256
