//! Every example of every `--help`, then every command of the `sh` blocks of README.md and of
//! the book's pages (`docs/src`, in SUMMARY.md's order: a `sh` block is a runnable block), runs
//! as a new user would type it: in a fresh directory
//! beside `../shared`, with the default store, after `hazardserve demo`, `ingest-public` and
//! the Azure conv workload (the README's set-up), each in the order the help pages list them,
//! through `sh` (redirections, loops and pipes included).
//!
//! Three kinds of example are not run to completion, each for a stated reason: `tui` needs a
//! terminal (it must say so; the TUI itself runs under tmux in `tui_e2e`), the committed long
//! experiments ([`LONG_GRIDS`]: the regime map and the length-noise grid) take minutes on two
//! cores (their `--dry-run` and `--where` slices run here), and `man -l`
//! needs `man`
//! (without it only the `hazardserve man` half runs).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::common::{help_tree, shared};

/// The committed long experiments: the regime map (about 23 minutes on two cores) and the
/// length-noise grid (about 10); their `--dry-run` and `--where` slices run here.
const LONG_GRIDS: [&str; 2] = ["regime-map", "length-noise"];

/// Shell commands from `lines`: blank and `#` comment lines left out, lines ending in `\\`
/// joined with the next, `cargo run --release --` written as the installed binary.
fn shell_commands<'a>(lines: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for l in lines {
        let t = l.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        match t.strip_suffix('\\') {
            Some(body) => {
                current.push_str(body.trim_end());
                current.push(' ');
            }
            None => {
                current.push_str(t);
                out.push(
                    std::mem::take(&mut current).replace("cargo run --release --", "hazardserve"),
                );
            }
        }
    }
    out
}

/// The examples of one `--help` text (its indented `Examples:` lines).
fn examples(help: &str) -> Vec<String> {
    shell_commands(
        help.lines()
            .skip_while(|l| !l.starts_with("Example"))
            .skip(1)
            .take_while(|l| !l.starts_with(|c: char| c.is_ascii_alphabetic())),
    )
}

/// The commands of a page's `sh` blocks.
fn page_commands(readme: &str) -> Vec<String> {
    let mut in_block = false;
    shell_commands(readme.lines().filter(|l| {
        if l.starts_with("```") {
            in_block = *l == "```sh";
            return false;
        }
        in_block
    }))
}

#[test]
fn every_help_example_and_book_command_runs_after_the_readme_set_up() {
    let (Some(traces), Some(workloads)) = (shared("traces-public"), shared("workloads-public"))
    else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    // tmp/shared is ../shared of the working directory tmp/work, which holds the checkout's
    // reports/, queries/ and traces/controls/ as a user's checkout would.
    let work = tmp.path().join("work");
    let home = tmp.path().join("home");
    for d in [
        &work,
        &home.join(".local/share/bash-completion/completions"),
        &home.join(".zfunc"),
        &home.join(".config/fish/completions"),
    ] {
        std::fs::create_dir_all(d).unwrap();
    }
    let shared_dir = traces.parent().unwrap();
    std::os::unix::fs::symlink(shared_dir, tmp.path().join("shared")).unwrap();
    for d in ["reports", "queries"] {
        std::os::unix::fs::symlink(root.join(d), work.join(d)).unwrap();
    }
    // The committed control fleet only: `synth traces --out traces/samples` must write here,
    // not into the checkout.
    std::fs::create_dir_all(work.join("traces")).unwrap();
    std::os::unix::fs::symlink(root.join("traces/controls"), work.join("traces/controls")).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_hazardserve"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let have_man = Command::new("sh")
        .args(["-c", "command -v man"])
        .output()
        .is_ok_and(|o| o.status.success());
    let run = |line: &str| {
        let started = Instant::now();
        let out = Command::new("sh")
            .arg("-c")
            .arg(line)
            .current_dir(&work)
            .env("PATH", &path)
            .env("HOME", &home)
            .env("PROFILE", home.join("profile.ps1"))
            .env_remove("HAZARDSERVE_STORE")
            .env_remove("HAZARDSERVE_FAULT")
            .env_remove("NO_COLOR")
            .output()
            .unwrap();
        (out, started.elapsed().as_secs_f64())
    };
    let azure = workloads.join("azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv");
    let set_up = [
        "hazardserve demo".to_string(),
        "hazardserve ingest-public ../shared/traces-public".to_string(),
        format!(
            "hazardserve ingest --format azure-llm --source azure-conv {}",
            azure.display()
        ),
    ];
    for line in &set_up {
        let (out, _) = run(line);
        assert!(
            out.status.success(),
            "set-up `{line}` failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut ran = 0;
    let mut failures = Vec::new();
    let mut timings = Vec::new();
    // README.md first, then the book's pages in reading order.
    let mut pages = vec![root.join("README.md")];
    pages.extend(crate::common::book_order(root));
    let page_lines: Vec<(String, String)> = pages
        .iter()
        .flat_map(|p| {
            let text =
                std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let origin = p.strip_prefix(root).unwrap_or(p).display().to_string();
            page_commands(&text)
                .into_iter()
                .map(move |l| (l, origin.clone()))
        })
        .collect();
    let lines = help_tree()
        .into_iter()
        .flat_map(|(cmd, help)| {
            let origin = format!("`hazardserve {} --help`", cmd.join(" "));
            examples(&help)
                .into_iter()
                .map(move |l| (l, origin.clone()))
        })
        .chain(page_lines);
    for (line, origin) in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.contains(&"tui") {
            // No terminal here: the TUI must refuse with a clear message, not hang.
            let (out, _) = run(&line);
            let err = String::from_utf8_lossy(&out.stderr);
            if out.status.success() || !err.contains("terminal") {
                failures.push(format!("`{line}` ({origin}) without a terminal: {err}"));
            }
            continue;
        }
        if LONG_GRIDS.iter().any(|g| line.contains(g))
            && !line.contains("--dry-run")
            && !line.contains("--where")
        {
            eprintln!("not run (a committed long experiment, minutes on two cores): {line}");
            continue;
        }
        let line = if line.contains("| man -l -") && !have_man {
            eprintln!("`man` is not installed: running only the hazardserve half of {line}");
            line.replace("| man -l -", "> /dev/null")
        } else {
            line
        };
        let (out, secs) = run(&line);
        ran += 1;
        timings.push((secs, line.clone()));
        if !out.status.success() {
            failures.push(format!(
                "`{line}` (from {origin}) exited with {}:\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    timings.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (secs, line) in timings.iter().take(5) {
        eprintln!("slowest examples: {secs:.1} s {line}");
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} examples failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(ran >= 120, "only {ran} examples ran");
}
