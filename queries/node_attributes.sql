-- Every node of one source (?1) with its attributes and observation span.
SELECT node_id, zone, instance_type, node_group, observed_from, observed_to
FROM nodes
WHERE source = ?
