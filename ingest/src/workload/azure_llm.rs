//! Azure LLM inference trace 2023 (Splitwise): CSV `TIMESTAMP,ContextTokens,GeneratedTokens`,
//! timestamps `YYYY-MM-DD HH:MM:SS.fffffff` without a zone (read as UTC). Arrivals are seconds
//! after the first timestamp over all files of the workload. Read with the `csv` crate
//! ([`crate::csv_input`]): quoted fields and CRLF are fine, and a record that is not valid UTF-8
//! is rejected on its own.

use chrono::NaiveDateTime;

use super::{tokens, Request, Workload, WorkloadOptions};
use crate::csv_input::csv_rows;
use crate::{InputFile, Rejects, Result};

const HEADER: &str = "TIMESTAMP,ContextTokens,GeneratedTokens";

/// Whether the file starts with the Azure header.
pub fn sniff(file: &InputFile) -> bool {
    file.bytes.starts_with(HEADER.as_bytes())
}

fn parse_time(s: &str) -> Option<f64> {
    let dt = NaiveDateTime::parse_from_str(s.trim(), "%Y-%m-%d %H:%M:%S%.f").ok()?;
    let utc = dt.and_utc();
    Some(utc.timestamp() as f64 + utc.timestamp_subsec_nanos() as f64 * 1e-9)
}

/// Parses Azure LLM CSVs.
pub fn parse(files: &[InputFile], options: &WorkloadOptions) -> Result<Workload> {
    let mut rejects = Rejects::new(options.strict);
    let mut rows: Vec<(f64, u32, u32, &str)> = Vec::new();
    for f in files {
        let name = f.display();
        for (k, row) in csv_rows(&f.bytes).enumerate() {
            let line = row.raw_text();
            let lineno = row.line;
            let fields: Vec<&str> = match &row.fields {
                Ok(r) => r.iter().collect(),
                Err(reason) => {
                    rejects.reject(&name, lineno, &line, reason.clone())?;
                    continue;
                }
            };
            if k == 0
                && fields
                    .first()
                    .is_some_and(|h| h.eq_ignore_ascii_case("TIMESTAMP"))
            {
                continue;
            }
            if fields.len() != 3 {
                rejects.reject(
                    &name,
                    lineno,
                    &line,
                    format!("expected 3 fields, found {}", fields.len()),
                )?;
                continue;
            }
            let Some(t) = parse_time(fields[0]) else {
                rejects.reject(
                    &name,
                    lineno,
                    &line,
                    format!(
                        "bad timestamp {:?} (want YYYY-MM-DD HH:MM:SS.fffffff)",
                        fields[0]
                    ),
                )?;
                continue;
            };
            match (tokens(fields[1]), tokens(fields[2])) {
                (Ok(p), Ok(o)) => rows.push((t, p, o, f.rel.as_str())),
                (Err(e), _) | (_, Err(e)) => rejects.reject(&name, lineno, &line, e)?,
            }
        }
    }
    let start = rows.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
    let requests = rows
        .into_iter()
        .map(|(t, p, o, file)| Request::plain(t - start, p, o, file.to_string()))
        .collect();
    Ok(Workload {
        requests,
        rejects: rejects.into_vec(),
        notes: Vec::new(),
        start_utc: start.is_finite().then_some(start),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(body: &str) -> InputFile {
        InputFile::from_bytes(
            "conv.csv".into(),
            "conv.csv",
            body.as_bytes().to_vec(),
            String::new(),
        )
    }

    #[test]
    fn parses_relative_arrivals() {
        let f = file("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109");
        assert!(sniff(&f));
        let w = parse(&[f], &WorkloadOptions::default()).unwrap();
        assert_eq!(w.requests.len(), 2);
        assert_eq!(w.requests[0].arrival_s, 0.0);
        assert!((w.requests[1].arrival_s - 4.314_579).abs() < 1e-6);
        assert_eq!(
            (w.requests[1].prompt_tokens, w.requests[1].output_tokens),
            (396, 109)
        );
    }

    #[test]
    fn bad_rows_are_rejected_with_line_numbers() {
        let f = file("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\nyesterday,1,2\n2023-11-16 18:15:47.00,-5,2\n2023-11-16 18:15:48.00,5,2\n");
        let w = parse(std::slice::from_ref(&f), &WorkloadOptions::default()).unwrap();
        assert_eq!(w.requests.len(), 2);
        assert_eq!(
            w.rejects.iter().map(|r| r.line).collect::<Vec<_>>(),
            vec![3, 4]
        );
        let strict = WorkloadOptions {
            strict: true,
            ..Default::default()
        };
        let e = parse(&[f], &strict).unwrap_err().to_string();
        assert!(e.contains("conv.csv:3:") && e.contains("timestamp"), "{e}");
    }
}
