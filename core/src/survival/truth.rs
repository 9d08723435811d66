//! The generating laws of a synthetic fleet (`policy.truth`): the file `synth traces --fleet`
//! writes beside the trace, read so that `hazard-truth` can price `L` with the distribution
//! each node's sessions were drawn from, never with their realisations.
//!
//! Format: CSV with the header `source,node_id,law,shape,scale_s`, one row per node;
//! `law` is `weibull` (shape `k > 0`, scale `lambda > 0` seconds) or `exponential` (mean
//! `scale_s`; `shape` is ignored). `source` is the store source the trace was ingested as, so
//! one file can describe several fleets and a scenario over any other source finds no law.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use super::curve::{ConditionalSurvival, Exponential, Weibull};

/// The header a laws file starts with.
pub const HEADER: &str = "source,node_id,law,shape,scale_s";

/// A laws file that cannot be read or has a bad row.
#[derive(Debug, thiserror::Error)]
pub enum TruthError {
    /// The file could not be read.
    #[error("reading the generating laws {file}")]
    Io {
        /// The file.
        file: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A row (or the header) is malformed.
    #[error("{file}:{line}: {message}")]
    Row {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// One node's generating law.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Law {
    /// Weibull sessions, `S(t) = exp(-(t / scale)^shape)`.
    Weibull {
        /// Shape `k`.
        shape: f64,
        /// Scale `lambda`, seconds.
        scale_s: f64,
    },
    /// Exponential sessions with this mean, seconds.
    Exponential {
        /// Mean, seconds.
        mean_s: f64,
    },
}

impl Law {
    /// The law as a conditional survival curve (exact at every age).
    pub fn curve(&self) -> Arc<dyn ConditionalSurvival> {
        match *self {
            Law::Weibull { shape, scale_s } => Arc::new(Weibull {
                shape,
                scale: scale_s,
            }),
            Law::Exponential { mean_s } => Arc::new(Exponential { mean: mean_s }),
        }
    }

    /// The CSV row of `node_id` of `source` under this law (without a newline).
    pub fn row(&self, source: &str, node_id: &str) -> String {
        match *self {
            Law::Weibull { shape, scale_s } => {
                format!("{source},{node_id},weibull,{shape},{scale_s}")
            }
            Law::Exponential { mean_s } => format!("{source},{node_id},exponential,1,{mean_s}"),
        }
    }
}

/// Parses a laws file's text; `file` names it in errors. Returns `(source, node_id) -> law`.
pub fn parse(text: &str, file: &str) -> Result<HashMap<(String, String), Law>, TruthError> {
    let bad = |line: usize, message: String| TruthError::Row {
        file: file.to_string(),
        line,
        message,
    };
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, h)) if h.trim().trim_start_matches('\u{feff}') == HEADER => {}
        Some((_, h)) => {
            return Err(bad(
                1,
                format!("expected the header `{HEADER}`, found `{}`", h.trim()),
            ))
        }
        None => {
            return Err(bad(
                1,
                format!("empty file (expected the header `{HEADER}`)"),
            ))
        }
    }
    let mut out = HashMap::new();
    for (i, raw) in lines {
        let line = i + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        if f.len() != 5 {
            return Err(bad(line, format!("expected 5 fields, found {}", f.len())));
        }
        let num = |k: usize, name: &str| -> Result<f64, TruthError> {
            match f[k].parse::<f64>() {
                Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
                _ => Err(bad(
                    line,
                    format!("{name} must be a positive number, found `{}`", f[k]),
                )),
            }
        };
        let law = match f[2] {
            "weibull" => Law::Weibull {
                shape: num(3, "shape")?,
                scale_s: num(4, "scale_s")?,
            },
            "exponential" => Law::Exponential {
                mean_s: num(4, "scale_s")?,
            },
            other => {
                return Err(bad(
                    line,
                    format!("unknown law `{other}` (expected weibull or exponential)"),
                ))
            }
        };
        if f[0].is_empty() || f[1].is_empty() {
            return Err(bad(line, "source and node_id must not be empty".into()));
        }
        let key = (f[0].to_string(), f[1].to_string());
        if out.insert(key, law).is_some() {
            return Err(bad(
                line,
                format!("node {} of source {} is listed twice", f[1], f[0]),
            ));
        }
    }
    Ok(out)
}

/// Reads the laws of `source`'s nodes from `path` (node id -> law; empty when the file lists
/// no node of `source`).
pub fn read(path: &Path, source: &str) -> Result<HashMap<String, Law>, TruthError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| TruthError::Io {
        file: file.clone(),
        source: e,
    })?;
    Ok(parse(&text, &file)?
        .into_iter()
        .filter(|((s, _), _)| s == source)
        .map(|((_, n), l)| (n, l))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rows_and_filters_by_source() {
        let text = format!(
            "{HEADER}\na,1,weibull,6,1200\na,2,exponential,1,600\n# note\nb,1,weibull,0.5,1200\n"
        );
        let all = parse(&text, "laws.csv").unwrap();
        assert_eq!(all.len(), 3);
        assert_eq!(
            all[&("a".into(), "1".into())],
            Law::Weibull {
                shape: 6.0,
                scale_s: 1200.0
            }
        );
        let c = all[&("a".into(), "2".into())].curve();
        assert!((c.survival(600.0) - (-1.0f64).exp()).abs() < 1e-12);
        let law = Law::Weibull {
            shape: 0.5,
            scale_s: 1200.0,
        };
        assert_eq!(
            parse(&format!("{HEADER}\n{}\n", law.row("x", "n7")), "f").unwrap()
                [&("x".into(), "n7".into())],
            law
        );
    }

    #[test]
    fn bad_rows_name_file_and_line() {
        let e = parse(&format!("{HEADER}\na,1,weibull,-1,5\n"), "laws.csv").unwrap_err();
        assert_eq!(
            e.to_string(),
            "laws.csv:2: shape must be a positive number, found `-1`"
        );
        let e = parse("node,law\n", "f.csv").unwrap_err().to_string();
        assert!(e.starts_with("f.csv:1: expected the header"), "{e}");
        let e = parse(&format!("{HEADER}\na,1,gamma,1,1\n"), "f").unwrap_err();
        assert!(e.to_string().contains("unknown law `gamma`"), "{e}");
        let e = parse(
            &format!("{HEADER}\na,1,weibull,1,1\na,1,weibull,1,2\n"),
            "f",
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("f:3: node 1 of source a is listed twice"),
            "{e}"
        );
    }
}
