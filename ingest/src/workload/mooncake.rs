//! Mooncake (FAST '25) JSON lines: `{"timestamp": ms, "input_length": n, "output_length": n,
//! "hash_ids": [...]}`. `hash_ids` (512-token prefix blocks) are not used by the replay yet.
//! Arrivals are `timestamp / 1000` seconds (the trace's own offsets). A line that is not valid
//! UTF-8, not a Mooncake request, or has a negative or non-finite timestamp is rejected.

use serde::Deserialize;

use super::{Request, Workload, WorkloadOptions};
use crate::{InputFile, Rejects, Result};

#[derive(Deserialize)]
struct Line {
    timestamp: f64,
    input_length: u32,
    output_length: u32,
}

/// Whether the first line is a JSON object with the Mooncake keys.
pub fn sniff(file: &InputFile) -> bool {
    let s = file.sniff_head().split('\n').next().unwrap_or_default();
    s.trim_start().starts_with('{') && s.contains("\"input_length\"") && s.contains("\"timestamp\"")
}

/// Parses Mooncake JSON lines.
pub fn parse(files: &[InputFile], options: &WorkloadOptions) -> Result<Workload> {
    let mut rejects = Rejects::new(options.strict);
    let mut requests = Vec::new();
    for f in files {
        let name = f.display();
        for row in f.lines() {
            let line = match row.text() {
                Ok(line) => line,
                Err(reason) => {
                    rejects.reject(&name, row.number, &row.lossy(), reason)?;
                    continue;
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Line>(line) {
                Ok(l) if l.timestamp.is_finite() && l.timestamp >= 0.0 => requests.push(Request {
                    arrival_s: l.timestamp / 1000.0,
                    prompt_tokens: l.input_length,
                    output_tokens: l.output_length,
                    file: f.rel.clone(),
                }),
                Ok(l) => rejects.reject(
                    &name,
                    row.number,
                    line,
                    format!("timestamp {} is negative or not finite", l.timestamp),
                )?,
                Err(e) => rejects.reject(
                    &name,
                    row.number,
                    line,
                    format!("not a Mooncake request: {e}"),
                )?,
            }
        }
    }
    Ok(Workload {
        requests,
        rejects: rejects.into_vec(),
        notes: Vec::new(),
        start_utc: None,
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
    }
}
