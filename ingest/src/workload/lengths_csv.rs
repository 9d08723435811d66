//! Any CSV of request lengths with a header: an arrival-time column (or a Poisson `--rate`), a
//! prompt-token column and an output-token column. Columns are found by common names unless
//! given (`--arrival-col`, `--prompt-col`, `--output-col`); the arrival unit comes from the
//! column-name suffix (`_ns`, `_us`, `_ms`, `_s`) unless `--arrival-unit` says otherwise.
//!
//! Arrival times are taken as seconds from the trace start, as they are, unless they are
//! absolute: when the earliest arrival over all files (after the unit) is at least
//! [`EPOCH_THRESHOLD_S`] seconds (10⁸ s ≈ 3.2 years, i.e. a Unix time after 1973-03-03), the
//! column holds Unix epoch times, and every arrival is made relative to the first one (the
//! first request arrives at 0) with [`Workload::start_utc`] set to it and a note. (Without this a
//! column of epoch seconds such as 1.7·10⁹ reads as a workload that starts 54 years in.)
//!
//! Files are read with the `csv` crate ([`crate::csv_input`]): quoted fields holding commas or
//! newlines, CRLF and a byte-order mark are fine; a record that is not valid UTF-8 is rejected
//! on its own. A file whose header lacks the columns is rejected as a whole (an error under
//! `--strict`, or when no file is usable).

use super::{tokens, Request, Workload, WorkloadOptions};
use crate::csv_input::{csv_rows, first_record};
use crate::{IngestError, InputFile, Rejects, Result};

/// Smallest first arrival (seconds) taken as a Unix epoch time rather than a trace offset.
pub const EPOCH_THRESHOLD_S: f64 = 1e8;

const ARRIVAL: &[&str] = &[
    "arrival_time_ns",
    "arrival_time_us",
    "arrival_time_ms",
    "arrival_time_s",
    "arrival_time",
    "arrival_s",
    "arrival",
    "timestamp",
    "time",
];
const PROMPT: &[&str] = &[
    "input_toks",
    "input_tokens",
    "prompt_tokens",
    "num_prefill_tokens",
    "input_length",
    "contexttokens",
    "prompt_len",
    "prompt_length",
];
const OUTPUT: &[&str] = &[
    "output_toks",
    "output_tokens",
    "num_decode_tokens",
    "output_length",
    "generatedtokens",
    "completion_tokens",
    "output_len",
];

/// Whether the header names a prompt and an output column we know.
pub fn sniff(file: &InputFile) -> bool {
    let Some(header) = first_record(file.sniff_head()) else {
        return false;
    };
    let cols: Vec<String> = header.iter().map(str::to_lowercase).collect();
    cols.iter().any(|c| PROMPT.contains(&c.as_str()))
        && cols.iter().any(|c| OUTPUT.contains(&c.as_str()))
}

fn find(
    header: &[String],
    given: &Option<String>,
    known: &[&str],
    what: &str,
    file: &str,
) -> Result<Option<usize>> {
    if let Some(name) = given {
        return header
            .iter()
            .position(|h| h.eq_ignore_ascii_case(name))
            .map(Some)
            .ok_or_else(|| IngestError::Bad {
                file: file.to_string(),
                line: 1,
                reason: format!(
                    "no {what} column {name:?}; the header has {}",
                    header.join(", ")
                ),
            });
    }
    Ok(known
        .iter()
        .find_map(|k| header.iter().position(|h| h.eq_ignore_ascii_case(k))))
}

fn unit_scale(unit: &str) -> Option<f64> {
    match unit {
        "s" => Some(1.0),
        "ms" => Some(1e-3),
        "us" => Some(1e-6),
        "ns" => Some(1e-9),
        _ => None,
    }
}

/// Parses lengths CSVs.
pub fn parse(files: &[InputFile], options: &WorkloadOptions) -> Result<Workload> {
    if let Some(u) = &options.arrival_unit {
        unit_scale(u).ok_or_else(|| {
            IngestError::Option(format!("--arrival-unit must be s, ms, us or ns, got {u:?}"))
        })?;
    }
    if let Some(rate) = options.rate {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(IngestError::Option(format!(
                "--rate must be positive, got {rate}"
            )));
        }
    }
    let mut acc = Acc {
        rejects: Rejects::new(options.strict),
        requests: Vec::new(),
        notes: Vec::new(),
        state: options.seed ^ 0x5DEE_CE66_D1CE_5EED,
        clock: 0.0,
    };
    for f in files {
        let read = parse_file(f, options, &mut acc);
        acc.rejects.absorb(read)?;
    }
    let Acc {
        rejects,
        mut requests,
        mut notes,
        ..
    } = acc;
    if requests.is_empty() && rejects.has_file_defect() {
        return Err(rejects.nothing_usable(IngestError::Empty(String::new())));
    }
    let start_utc = if options.rate.is_none() {
        normalise_epoch(&mut requests, &mut notes)
    } else {
        None
    };
    Ok(Workload {
        requests,
        rejects: rejects.into_vec(),
        notes,
        start_utc,
    })
}

/// What the files of one workload add up to.
struct Acc {
    rejects: Rejects,
    requests: Vec<Request>,
    notes: Vec<String>,
    /// Poisson generator state and clock (continued across files).
    state: u64,
    clock: f64,
}

/// Makes epoch arrivals relative to the first one (see the module docs); returns the absolute
/// start when it did.
fn normalise_epoch(requests: &mut [Request], notes: &mut Vec<String>) -> Option<f64> {
    let first = requests
        .iter()
        .map(|r| r.arrival_s)
        .fold(f64::INFINITY, f64::min);
    let last = requests
        .iter()
        .map(|r| r.arrival_s)
        .fold(f64::NEG_INFINITY, f64::max);
    if !first.is_finite() {
        return None;
    }
    if first >= EPOCH_THRESHOLD_S {
        for r in requests.iter_mut() {
            r.arrival_s -= first;
        }
        let when = chrono::DateTime::from_timestamp(first as i64, 0)
            .map_or_else(|| format!("{first} s"), |d| d.to_rfc3339());
        notes.push(format!(
            "arrival times are Unix epoch times (the first is {first} s = {when}): made relative \
             to the first arrival"
        ));
        return Some(first);
    }
    if last - first > 365.0 * 86_400.0 {
        notes.push(format!(
            "arrivals span {:.0} days ({first} s to {last} s): mixed units, or absolute and \
             relative times mixed? pass --arrival-unit if the column's unit is not seconds",
            (last - first) / 86_400.0
        ));
    }
    None
}

/// Reads one file into `acc`; a file-level problem (header without the columns) is an `Err`.
fn parse_file(f: &InputFile, options: &WorkloadOptions, acc: &mut Acc) -> Result<()> {
    let name = f.display();
    let rows: Vec<_> = csv_rows(&f.bytes).collect();
    let Some((header_row, data)) = rows.split_first() else {
        return Ok(());
    };
    let header: Vec<String> = match &header_row.fields {
        Ok(r) => r.iter().map(str::to_string).collect(),
        Err(reason) => {
            return Err(IngestError::Bad {
                file: name,
                line: header_row.line,
                reason: format!("header: {reason}"),
            })
        }
    };
    let prompt = find(&header, &options.prompt_col, PROMPT, "prompt-token", &name)?;
    let output = find(&header, &options.output_col, OUTPUT, "output-token", &name)?;
    let (Some(prompt), Some(output)) = (prompt, output) else {
        return Err(IngestError::Bad {
            file: name,
            line: header_row.line,
            reason: format!(
                "cannot find prompt and output token columns in {:?}; pass --prompt-col and \
                 --output-col",
                header.join(",")
            ),
        });
    };
    let arrival = if options.rate.is_some() {
        None
    } else {
        find(&header, &options.arrival_col, ARRIVAL, "arrival", &name)?
    };
    let scale = match (&options.arrival_unit, arrival) {
        (Some(u), _) => unit_scale(u).unwrap_or(1.0),
        (None, Some(i)) => {
            let h = header[i].to_lowercase();
            ["ns", "us", "ms", "s"]
                .iter()
                .find(|u| h.ends_with(&format!("_{u}")))
                .and_then(|u| unit_scale(u))
                .unwrap_or(1.0)
        }
        (None, None) => 1.0,
    };
    if arrival.is_none() && options.rate.is_none() {
        return Err(IngestError::Bad {
            file: name,
            line: header_row.line,
            reason: "no arrival-time column; pass --arrival-col NAME or --rate REQ_PER_S for \
                     Poisson arrivals"
                .into(),
        });
    }
    if let Some(rate) = options.rate {
        acc.notes.push(format!(
            "{}: Poisson arrivals at {rate} req/s (seed {})",
            f.rel, options.seed
        ));
    }
    let need = prompt.max(output).max(arrival.unwrap_or(0)) + 1;
    let rejects = &mut acc.rejects;
    for row in data {
        let line = row.raw_text();
        let lineno = row.line;
        let fields: Vec<&str> = match &row.fields {
            Ok(r) => r.iter().collect(),
            Err(reason) => {
                rejects.reject(&name, lineno, &line, reason.clone())?;
                continue;
            }
        };
        if fields.len() < need {
            rejects.reject(
                &name,
                lineno,
                &line,
                format!("expected at least {need} fields, found {}", fields.len()),
            )?;
            continue;
        }
        let (p, o) = match (tokens(fields[prompt]), tokens(fields[output])) {
            (Ok(p), Ok(o)) => (p, o),
            (Err(e), _) | (_, Err(e)) => {
                rejects.reject(&name, lineno, &line, e)?;
                continue;
            }
        };
        let t = match arrival {
            Some(a) => match fields[a].parse::<f64>() {
                Ok(v) if v.is_finite() && v >= 0.0 && (v * scale).is_finite() => v * scale,
                _ => {
                    rejects.reject(
                        &name,
                        lineno,
                        &line,
                        format!("arrival {:?} is not a non-negative number", fields[a]),
                    )?;
                    continue;
                }
            },
            None => {
                acc.state = acc.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = acc.state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                let u = ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64;
                acc.clock += -(1.0 - u).ln() / options.rate.unwrap_or(1.0);
                acc.clock
            }
        };
        acc.requests.push(Request::plain(t, p, o, f.rel.clone()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, body: &str) -> InputFile {
        InputFile::from_bytes(name.into(), name, body.as_bytes().to_vec(), String::new())
    }

    #[test]
    fn detects_columns_and_units() {
        let f = file(
            "s.csv",
            "arrival_time_ns,input_toks,output_toks\n46926808,85,416\n347938951,9,333\n",
        );
        assert!(sniff(&f));
        let w = parse(&[f], &WorkloadOptions::default()).unwrap();
        assert_eq!(w.requests.len(), 2);
        assert!((w.requests[1].arrival_s - 0.347_938_951).abs() < 1e-12);
        assert_eq!(w.requests[0].prompt_tokens, 85);
    }

    #[test]
    fn rate_gives_poisson_arrivals_and_missing_arrivals_need_it() {
        let body = "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n3772,54,3826,69.8\n2015,156,2171,12.9\n100,10,110,10\n";
        let f = file("v.csv", body);
        let e = parse(std::slice::from_ref(&f), &WorkloadOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("v.csv:1:") && e.contains("--rate"), "{e}");
        let opts = WorkloadOptions {
            rate: Some(2.0),
            seed: 3,
            ..Default::default()
        };
        let w = parse(std::slice::from_ref(&f), &opts).unwrap();
        assert_eq!(w.requests.len(), 3);
        assert!(w
            .requests
            .windows(2)
            .all(|p| p[0].arrival_s < p[1].arrival_s));
        let again = parse(&[f], &opts).unwrap();
        assert_eq!(w.requests, again.requests);
    }

    #[test]
    fn explicit_columns_and_bad_rows() {
        let f = file("x.csv", "t,a,b\n0.5,10,20\n1.0,x,20\n1.5,10\n");
        let opts = WorkloadOptions {
            arrival_col: Some("t".into()),
            prompt_col: Some("a".into()),
            output_col: Some("b".into()),
            ..Default::default()
        };
        let w = parse(&[f], &opts).unwrap();
        assert_eq!(w.requests.len(), 1);
        assert_eq!(
            w.rejects.iter().map(|r| r.line).collect::<Vec<_>>(),
            vec![3, 4]
        );
    }
}
