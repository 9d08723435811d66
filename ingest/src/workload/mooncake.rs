//! Mooncake (FAST '25) JSON lines: `{"timestamp": ms, "input_length": n, "output_length": n,
//! "hash_ids": [...]}`. `hash_ids` are the prompt's prefix blocks of 512 tokens, kept as
//! [`Request::prefix_blocks`] (a line without them has none). Arrivals are `timestamp / 1000`
//! seconds (the trace's own offsets). A line that is not valid UTF-8, not a Mooncake request,
//! has a negative or non-finite timestamp, or more prefix blocks than its prompt fills is
//! rejected.

use serde::Deserialize;

use super::{json_lines, prefix_fits, Request, Workload, WorkloadOptions};
use crate::{InputFile, Result};

/// Tokens per `hash_ids` block.
pub const BLOCK_TOKENS: u32 = 512;

#[derive(Deserialize)]
struct Line {
    timestamp: f64,
    input_length: u32,
    output_length: u32,
    #[serde(default)]
    hash_ids: Vec<i64>,
}

/// Whether the first line is a JSON object with the Mooncake keys.
pub fn sniff(file: &InputFile) -> bool {
    let s = file.sniff_head().split('\n').next().unwrap_or_default();
    s.trim_start().starts_with('{') && s.contains("\"input_length\"") && s.contains("\"timestamp\"")
}

/// Parses Mooncake JSON lines.
pub fn parse(files: &[InputFile], options: &WorkloadOptions) -> Result<Workload> {
    json_lines(files, options, "Mooncake", |f, _, _, l: Line| {
        if !(l.timestamp.is_finite() && l.timestamp >= 0.0) {
            return Err(format!(
                "timestamp {} is negative or not finite",
                l.timestamp
            ));
        }
        prefix_fits(l.hash_ids.len(), BLOCK_TOKENS, l.input_length)?;
        let at = l.timestamp / 1000.0;
        Ok(
            Request::plain(at, l.input_length, l.output_length, f.rel.clone())
                .with_prefix(l.hash_ids, BLOCK_TOKENS),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let body = "{\"timestamp\": 0, \"input_length\": 6758, \"output_length\": 500, \"hash_ids\": [0, 1]}\n{\"timestamp\": 1500, \"input_length\": 10}\n{\"timestamp\": 2500, \"input_length\": 7, \"output_length\": 3, \"hash_ids\": []}\n";
        let f = InputFile::from_bytes(
            "m.jsonl".into(),
            "m.jsonl",
            body.as_bytes().to_vec(),
            String::new(),
        );
        assert!(sniff(&f));
        let w = parse(&[f], &WorkloadOptions::default()).unwrap();
        assert_eq!(w.requests.len(), 2);
        assert_eq!(w.requests[1].arrival_s, 2.5);
        assert_eq!(w.rejects.len(), 1);
        assert_eq!(w.rejects[0].line, 2);
        assert!(w.rejects[0].reason.contains("output_length"));
        assert_eq!(w.requests[0].prefix_blocks, vec![0, 1]);
        assert_eq!(w.requests[0].block_tokens, 512);
        assert!(w.requests[1].prefix_blocks.is_empty());
        assert_eq!(w.requests[1].block_tokens, 0);
    }

    #[test]
    fn a_prefix_longer_than_the_prompt_is_rejected() {
        // 1,025 tokens fill three 512-token blocks; four are one too many.
        let body = "{\"timestamp\": 0, \"input_length\": 1025, \"output_length\": 5, \"hash_ids\": [0, 1, 2]}\n{\"timestamp\": 9, \"input_length\": 1025, \"output_length\": 5, \"hash_ids\": [0, 1, 2, 3]}\n";
        let f = InputFile::from_bytes(
            "m.jsonl".into(),
            "m.jsonl",
            body.as_bytes().to_vec(),
            String::new(),
        );
        let w = parse(std::slice::from_ref(&f), &WorkloadOptions::default()).unwrap();
        assert_eq!(w.requests.len(), 1);
        assert_eq!(w.rejects[0].line, 2);
        assert!(
            w.rejects[0].reason.contains("4 prefix blocks"),
            "{}",
            w.rejects[0].reason
        );
        let strict = WorkloadOptions {
            strict: true,
            ..WorkloadOptions::default()
        };
        let e = parse(&[f], &strict).unwrap_err().to_string();
        assert!(e.contains("m.jsonl:2:"), "{e}");
    }
}
