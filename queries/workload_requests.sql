-- Every request of one workload source (?1), in arrival order.
SELECT request_id, arrival_s, prompt_tokens, output_tokens
FROM requests
WHERE source = ?
ORDER BY arrival_s, request_id
