//! Any CSV of request lengths with a header: an arrival-time column (or a Poisson `--rate`), a
//! prompt-token column and an output-token column. Columns are found by common names unless
//! given (`--arrival-col`, `--prompt-col`, `--output-col`); the arrival unit comes from the
//! column-name suffix (`_ns`, `_us`, `_ms`, `_s`) unless `--arrival-unit` says otherwise.

use super::{csv_fields, tokens, Request, Workload, WorkloadOptions};
use crate::{IngestError, InputFile, Rejects, Result};

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
    let first = file
        .sniff_head()
        .split('\n')
        .next()
        .unwrap_or_default()
        .to_lowercase();
    let cols = csv_fields(&first);
    cols.iter().any(|c| PROMPT.contains(c)) && cols.iter().any(|c| OUTPUT.contains(c))
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
    let mut rejects = Rejects::new(options.strict);
    let mut requests = Vec::new();
    let mut notes = Vec::new();
    let mut state = options.seed ^ 0x5DEE_CE66_D1CE_5EED;
    let mut clock = 0.0;
    for f in files {
        let name = f.display();
        let text = f.text()?;
        let mut lines = text.lines().enumerate();
        let Some((_, header_line)) = lines.next() else {
            continue;
        };
        let header: Vec<String> = csv_fields(header_line.trim_start_matches('\u{feff}'))
            .iter()
            .map(|s| s.to_string())
            .collect();
        let prompt = find(&header, &options.prompt_col, PROMPT, "prompt-token", &name)?;
        let output = find(&header, &options.output_col, OUTPUT, "output-token", &name)?;
        let (Some(prompt), Some(output)) = (prompt, output) else {
            return Err(IngestError::Bad {
                file: name,
                line: 1,
                reason: format!("cannot find prompt and output token columns in {:?}; pass --prompt-col and --output-col", header.join(",")),
            });
        };
        let arrival = if options.rate.is_some() {
            None
        } else {
            find(&header, &options.arrival_col, ARRIVAL, "arrival", &name)?
        };
        let scale = match (&options.arrival_unit, arrival) {
            (Some(u), _) => unit_scale(u).ok_or_else(|| {
                IngestError::Option(format!("--arrival-unit must be s, ms, us or ns, got {u:?}"))
            })?,
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
                line: 1,
                reason: "no arrival-time column; pass --arrival-col NAME or --rate REQ_PER_S for Poisson arrivals".into(),
            });
        }
        if let Some(rate) = options.rate {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(IngestError::Option(format!(
                    "--rate must be positive, got {rate}"
                )));
            }
            notes.push(format!(
                "{}: Poisson arrivals at {rate} req/s (seed {})",
                f.rel, options.seed
            ));
        }
        let need = prompt.max(output).max(arrival.unwrap_or(0)) + 1;
        for (i, line) in lines {
            let lineno = i as u64 + 1;
            if line.trim().is_empty() {
                continue;
            }
            let fields = csv_fields(line);
            if fields.len() < need {
                rejects.reject(
                    &name,
                    lineno,
                    line,
                    format!("expected at least {need} fields, found {}", fields.len()),
                )?;
                continue;
            }
            let (p, o) = match (tokens(fields[prompt]), tokens(fields[output])) {
                (Ok(p), Ok(o)) => (p, o),
                (Err(e), _) | (_, Err(e)) => {
                    rejects.reject(&name, lineno, line, e)?;
                    continue;
                }
            };
            let t = match arrival {
                Some(a) => match fields[a].parse::<f64>() {
                    Ok(v) if v.is_finite() && v >= 0.0 => v * scale,
                    _ => {
                        rejects.reject(
                            &name,
                            lineno,
                            line,
                            format!("arrival {:?} is not a non-negative number", fields[a]),
                        )?;
                        continue;
                    }
                },
                None => {
                    state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                    let mut z = state;
                    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                    let u = ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64;
                    clock += -(1.0 - u).ln() / options.rate.unwrap_or(1.0);
                    clock
                }
            };
            requests.push(Request {
                arrival_s: t,
                prompt_tokens: p,
                output_tokens: o,
                file: f.rel.clone(),
            });
        }
    }
    Ok(Workload {
        requests,
        rejects: rejects.into_vec(),
        notes,
        start_utc: None,
    })
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
