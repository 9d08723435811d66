-- Every node of one source (?2) with its group under the attribute ?1 ('zone',
-- 'instance_type', 'node_group'; anything else: one group 'all'; a missing value: '(none)').
SELECT node_id,
       CASE ?
           WHEN 'zone' THEN coalesce(zone, '(none)')
           WHEN 'instance_type' THEN coalesce(instance_type, '(none)')
           WHEN 'node_group' THEN coalesce(node_group, '(none)')
           ELSE 'all'
       END AS grp,
       observed_from, observed_to
FROM nodes
WHERE source = ?
ORDER BY node_id
