-- Purpose: the cells of a sweep where the hazard term pays (hazard beats hazard-pooled, its
--   hazard-blind twin, on mean completion with q < 0.05 in a cell with something to win) or
--   pre-emptive migration pays; `hazardserve sweep summary` has every number behind the
--   verdicts (and the load forecast's verdict).
-- Param sweep = '': the sweep id ('' for the latest sweep)
-- Param which = any: hazard (the hazard term pays), migration (migration pays) or any
-- Columns: sweep_id, position, cell, pays, migration_pays
WITH w AS (
    SELECT sweep_id FROM sweeps
    WHERE $sweep = '' OR sweep_id = $sweep
    ORDER BY created_at DESC, sweep_id DESC
    LIMIT 1
), c AS (
    SELECT
        c.sweep_id, c.position, c.cell,
        -- Cells stored before the twin ran have no `vs_pooled`: their hazard term is unknown.
        regexp_extract(c.result, '"pays":(true|false)', 1) = 'true'
            AND strpos(c.result, '"vs_pooled":{') > 0 AS pays,
        regexp_extract(c.result, '"migration_pays":(true|false)', 1) = 'true' AS migration_pays
    FROM sweep_cells c
    JOIN w USING (sweep_id)
)
SELECT * FROM c
WHERE ($which = 'hazard' AND pays)
   OR ($which = 'migration' AND migration_pays)
   OR ($which NOT IN ('hazard', 'migration') AND (pays OR migration_pays))
ORDER BY position
