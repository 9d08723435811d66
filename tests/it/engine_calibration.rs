//! The published engine measurements the step model is fitted to
//! ([`hazardserve::policy::measurements`]) are the figures `../shared/engine-calibration/`
//! holds, row by row: every embedded DGX Spark row equals its `llama-batched-bench` line and
//! every embedded Vidur row its profile line; the rows left out are the ones the module names.

use hazardserve::policy::calibration::{Figure, KERNEL_PROFILES, REFERENCE_TABLES};

use crate::common::shared;

/// The CSV at `path` as header-keyed rows.
fn rows(path: &std::path::Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap()
        .split(',')
        .map(str::to_string)
        .collect();
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split(',').map(str::to_string))
                .collect()
        })
        .collect()
}

fn num(row: &std::collections::HashMap<String, String>, key: &str) -> f64 {
    row[key].parse().unwrap()
}

#[test]
fn the_dgx_spark_rows_are_the_published_ones() {
    let Some(dir) = shared("engine-calibration") else {
        return;
    };
    let csv = rows(&dir.join("llamacpp-dgx-spark-batched.csv"));
    for (name, model) in [
        ("DGX Spark qwen2.5-coder-7b", "qwen2.5-coder-7b-q8_0"),
        ("DGX Spark gpt-oss-20b", "gpt-oss-20b-mxfp4"),
    ] {
        let t = REFERENCE_TABLES.iter().find(|t| t.name == name).unwrap();
        let published: Vec<_> = csv.iter().filter(|r| r["model"] == model).collect();
        let mut decode = 0;
        for m in t.rows {
            let (want, what) = match m.figure {
                Figure::Prefill { prompt } => {
                    let r = published
                        .iter()
                        .find(|r| num(r, "pp") == f64::from(prompt) && num(r, "b") == 1.0)
                        .unwrap();
                    (num(r, "s_pp_tok_s"), format!("pp{prompt}"))
                }
                Figure::Decode {
                    batch,
                    prompt,
                    generated,
                } => {
                    decode += 1;
                    let r = published
                        .iter()
                        .find(|r| {
                            num(r, "pp") == f64::from(prompt)
                                && num(r, "b") == f64::from(batch)
                                && num(r, "tg") == f64::from(generated)
                        })
                        .unwrap();
                    (num(r, "s_tg_tok_s"), format!("b{batch} pp{prompt}"))
                }
                Figure::LinearOps { .. } => panic!("{name}: a kernel row in a batched table"),
            };
            assert_eq!(m.value, want, "{name} {what}");
        }
        // Every decode row is kept; of the prefill rows only gpt-oss's lone pp512 (warm-up)
        // is left out.
        assert_eq!(decode, published.len(), "{name}");
        let prefill = t
            .rows
            .iter()
            .filter(|m| matches!(m.figure, Figure::Prefill { .. }))
            .count();
        let lone = published.iter().filter(|r| num(r, "b") == 1.0).count();
        let left_out = usize::from(model.starts_with("gpt-oss"));
        assert_eq!(prefill + left_out, lone, "{name}");
        assert!(t.setup.contains("left out") == (left_out == 1), "{name}");
    }
}

#[test]
fn the_vidur_rows_are_the_published_ones() {
    let Some(dir) = shared("engine-calibration") else {
        return;
    };
    let csv = rows(&dir.join("vidur-mlp-per-iteration.csv"));
    assert_eq!(KERNEL_PROFILES.len(), 4);
    for t in KERNEL_PROFILES {
        // "Vidur A100 llama-3-8b": the device and the model as the CSV spells them.
        let words: Vec<&str> = t.name.split(' ').collect();
        let device = words[1].to_ascii_lowercase();
        let model = match words[2] {
            "llama-3-8b" => "Meta-Llama-3-8B",
            "llama-2-7b" => "Llama-2-7b-hf",
            other => panic!("unknown model {other}"),
        };
        let profile: Vec<_> = csv
            .iter()
            .filter(|r| r["device"] == device && r["model"] == model)
            .collect();
        assert!(!profile.is_empty(), "{}", t.name);
        let mut tokens = Vec::new();
        for m in t.rows {
            let Figure::LinearOps { tokens: n } = m.figure else {
                panic!("{}: not a kernel row", t.name);
            };
            let r = profile
                .iter()
                .find(|r| num(r, "num_tokens") == f64::from(n))
                .unwrap_or_else(|| panic!("{}: no {n}-token row", t.name));
            assert_eq!(m.value, num(r, "linear_ops_ms"), "{} {n}", t.name);
            tokens.push(n);
        }
        // The powers of two from 1 to 4,096 tokens.
        let want: Vec<u32> = (0..13).map(|k| 1u32 << k).collect();
        assert_eq!(tokens, want, "{}", t.name);
    }
}
