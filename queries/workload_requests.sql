-- Every request of one workload source (?1), in arrival order, with its prefix blocks as
-- comma-separated ids, their size and its conversation id (NULL where the source has none,
-- or was stored before schema 2).
SELECT request_id, arrival_s, prompt_tokens, output_tokens, block_tokens,
       array_to_string(prefix_blocks, ',') AS prefix_blocks, conversation_id
FROM requests
WHERE source = ?
ORDER BY arrival_s, request_id
