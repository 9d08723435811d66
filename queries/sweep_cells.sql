-- The cells of one sweep (?1), in grid order.
SELECT sweep_id, position, cell, axes, config, requests, result
FROM sweep_cells
WHERE sweep_id = ?
ORDER BY position
