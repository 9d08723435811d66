//! Prefix structure in workloads: the `requests` table's prefix blocks, block size and
//! conversation ids, from the Mooncake and Qwen-Bailian adapters; bad Qwen-Bailian lines
//! refused under `--strict` with nothing ingested; a source stored before the columns existed
//! still reads, with them NULL, and the store says so.

use std::path::Path;

use serde_json::Value;

use crate::common::{fails, hs, ok, shared, write};

/// Rows of `sql` as JSON objects.
fn rows(store: &Path, sql: &str) -> Vec<Value> {
    let mut c = hs(store);
    c.args(["-q", "sql", sql, "--format", "json"]);
    serde_json::from_str(&ok(c)).expect("sql prints JSON")
}

/// Two conversations of the Qwen-Bailian schema: chat 1 (three turns, each prompt extending
/// the last) and chat 2 (one turn), written as the trace writes them.
const QWEN: &str = r#"{"chat_id": 1, "parent_chat_id": -1, "timestamp": 0.5, "input_length": 40, "output_length": 9, "type": "text", "turn": 1, "hash_ids": [100, 101, 102]}
{"chat_id": 2, "parent_chat_id": -1, "timestamp": 0.75, "input_length": 16, "output_length": 3, "type": "text", "turn": 1, "hash_ids": [200]}
{"chat_id": 3, "parent_chat_id": 1, "timestamp": 30.0, "input_length": 80, "output_length": 12, "type": "text", "turn": 2, "hash_ids": [100, 101, 102, 103, 104]}
{"chat_id": 4, "parent_chat_id": 3, "timestamp": 95.5, "input_length": 120, "output_length": 20, "type": "text", "turn": 3, "hash_ids": [100, 101, 102, 103, 104, 105, 106, 107]}
"#;

#[test]
fn qwen_bailian_conversations_and_prefix_blocks_reach_the_requests_table() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let trace = write(tmp.path(), "qwen/trace.jsonl", QWEN);
    // Sniffed without --format.
    let mut c = hs(&store);
    c.args(["-q", "ingest", "--source", "qwen"]).arg(&trace);
    ok(c);
    let got = rows(
        &store,
        "SELECT conversation_id, block_tokens, len(prefix_blocks) AS blocks, \
         prefix_blocks[1] AS first, prompt_tokens FROM requests WHERE source = 'qwen' \
         ORDER BY arrival_s",
    );
    let seen: Vec<(String, i64, i64, i64, i64)> = got
        .iter()
        .map(|r| {
            (
                r["conversation_id"].as_str().unwrap().to_string(),
                r["block_tokens"].as_i64().unwrap(),
                r["blocks"].as_i64().unwrap(),
                r["first"].as_i64().unwrap(),
                r["prompt_tokens"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("1".to_string(), 16, 3, 100, 40),
            ("2".to_string(), 16, 1, 200, 16),
            ("1".to_string(), 16, 5, 100, 80),
            ("1".to_string(), 16, 8, 100, 120),
        ]
    );
}

#[test]
fn a_bad_qwen_bailian_line_under_strict_names_its_file_and_line_and_ingests_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    // The third turn's parent comes after it.
    let body = QWEN.replace("\"parent_chat_id\": 3,", "\"parent_chat_id\": 9,");
    let trace = write(tmp.path(), "qwen/trace.jsonl", &body);
    let mut c = hs(&store);
    c.args([
        "-q",
        "ingest",
        "--format",
        "qwen-bailian",
        "--source",
        "qwen",
        "--strict",
    ])
    .arg(&trace);
    let out = fails(c);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("trace.jsonl:4:") && err.contains("parent chat 9"),
        "{err}"
    );
    let committed = std::fs::read_dir(store.join("manifests")).map_or(0, |d| d.count());
    assert_eq!(committed, 0, "nothing of the refused trace is stored");
}

#[test]
fn mooncake_prefix_blocks_are_kept_and_an_older_source_reads_them_as_null() {
    let Some(dir) = shared("workloads-public/mooncake-fast25") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let mut c = hs(&store);
    c.args(["-q", "ingest", "--format", "mooncake", "--source", "mc"])
        .arg(dir.join("conversation_trace.jsonl"));
    ok(c);
    // Every request has its 512-token blocks, never more than its prompt fills.
    let got = rows(
        &store,
        "SELECT count(*) AS n, count(*) FILTER (WHERE len(prefix_blocks) > 0) AS with_blocks, \
         count(*) FILTER (WHERE len(prefix_blocks) > ceil(prompt_tokens / 512)) AS too_long, \
         min(block_tokens) AS lo, max(block_tokens) AS hi, \
         count(conversation_id) AS conversations FROM requests WHERE source = 'mc'",
    );
    let r = &got[0];
    assert_eq!(r["n"].as_i64(), Some(12_031), "{r}");
    assert_eq!(r["with_blocks"].as_i64(), Some(12_031), "{r}");
    assert_eq!(r["too_long"].as_i64(), Some(0), "{r}");
    assert_eq!((r["lo"].as_i64(), r["hi"].as_i64()), (Some(512), Some(512)));
    assert_eq!(r["conversations"].as_i64(), Some(0), "the trace names none");

    // The same source as a store of schema 1 holds it: its requests file without the
    // prefix columns, its manifest at version 1.
    let manifests = store.join("manifests");
    let manifest_path = std::fs::read_dir(&manifests)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            std::fs::read_to_string(p)
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .is_some_and(|m| m["source"] == "mc")
        })
        .expect("the source's manifest");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
    let files = manifest["files"].as_array_mut().unwrap();
    let entry = files
        .iter_mut()
        .find(|f| f["table"] == "requests")
        .expect("a requests file");
    let path = store.join(entry["path"].as_str().unwrap());
    let old = drop_prefix_columns(&path);
    entry["bytes"] = Value::from(old);
    entry["sha256"] = Value::from(sha256_hex(&path));
    manifest["schema_version"] = Value::from(1);
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();

    let mut c = hs(&store);
    c.args([
        "sql",
        "SELECT count(*) AS n, count(prefix_blocks) AS blocks, count(block_tokens) AS sizes, \
         count(conversation_id) AS conversations, sum(prompt_tokens) AS prompt \
         FROM requests WHERE source = 'mc'",
        "--format",
        "json",
    ]);
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["n"].as_i64(), Some(12_031));
    assert_eq!(v[0]["blocks"].as_i64(), Some(0));
    assert_eq!(v[0]["sizes"].as_i64(), Some(0));
    assert_eq!(v[0]["conversations"].as_i64(), Some(0));
    assert!(v[0]["prompt"].as_i64().unwrap() > 0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("workload source mc") && err.contains("--replace"),
        "the store says what the older source lacks: {err}"
    );

    // Beside a source of schema 2, each reads as it was stored; `store verify` accepts both.
    let trace = write(tmp.path(), "qwen/trace.jsonl", QWEN);
    let mut c = hs(&store);
    c.args(["-q", "ingest", "--source", "qwen"]).arg(&trace);
    ok(c);
    let mixed = rows(
        &store,
        "SELECT source, typeof(prefix_blocks) AS kind, count(prefix_blocks) AS blocks          FROM requests GROUP BY ALL ORDER BY source",
    );
    let mixed: Vec<(&str, &str, i64)> = mixed
        .iter()
        .map(|r| {
            (
                r["source"].as_str().unwrap(),
                r["kind"].as_str().unwrap(),
                r["blocks"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(mixed, [("mc", "BIGINT[]", 0), ("qwen", "BIGINT[]", 4)]);
    let mut c = hs(&store);
    c.args(["store", "verify"]);
    ok(c);
    // Ingesting the older source again with --replace adds its prefix data.
    let mut c = hs(&store);
    c.args([
        "-q",
        "ingest",
        "--format",
        "mooncake",
        "--source",
        "mc",
        "--replace",
    ])
    .arg(dir.join("conversation_trace.jsonl"));
    ok(c);
    let r = &rows(
        &store,
        "SELECT count(prefix_blocks) AS blocks FROM requests WHERE source = 'mc'",
    )[0];
    assert_eq!(r["blocks"].as_i64(), Some(12_031));
}

/// The sha256 of the file at `path`, in hex (as a manifest records it).
fn sha256_hex(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(std::fs::read(path).unwrap());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Rewrites the Parquet file at `path` without the prefix columns (as schema 1 wrote it);
/// returns its new size.
fn drop_prefix_columns(path: &Path) -> u64 {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::ArrowWriter;
    let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<arrow::record_batch::RecordBatch> = reader.map(|b| b.unwrap()).collect();
    let keep: Vec<usize> = batches[0]
        .schema()
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            !hazardserve::ingest::workload::PREFIX_COLUMNS.contains(&f.name().as_str())
        })
        .map(|(i, _)| i)
        .collect();
    let old: Vec<_> = batches.iter().map(|b| b.project(&keep).unwrap()).collect();
    let tmp = path.with_extension("old");
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(&tmp).unwrap(), old[0].schema(), None).unwrap();
    for b in &old {
        w.write(b).unwrap();
    }
    w.close().unwrap();
    std::fs::rename(&tmp, path).unwrap();
    std::fs::metadata(path).unwrap().len()
}

/// The demo's store, with `synth workload --class conversation` ingested as `conv`.
fn conversations_store(dir: &Path) -> std::path::PathBuf {
    let store = dir.join("store");
    let mut c = hs(&store);
    c.arg("-q")
        .arg("demo")
        .arg("--samples")
        .arg(crate::common::samples());
    ok(c);
    let trace = dir.join("conv.jsonl");
    let mut c = hs(&store);
    c.args([
        "synth",
        "workload",
        "--class",
        "conversation",
        "--rate",
        "0.3",
    ])
    .args(["--duration", "1800", "--seed", "3", "--out"])
    .arg(&trace);
    ok(c);
    let lines = std::fs::read_to_string(&trace)
        .expect("written")
        .lines()
        .count();
    assert!(lines > 100, "{lines} turns");
    let mut c = hs(&store);
    c.args([
        "-q",
        "ingest",
        "--format",
        "qwen-bailian",
        "--source",
        "conv",
    ])
    .arg(&trace);
    ok(c);
    store
}

#[test]
fn synthetic_conversations_replay_with_prefix_caches_and_the_routers() {
    let tmp = tempfile::tempdir().unwrap();
    let store = conversations_store(tmp.path());
    let cfg = tmp.path().join("conv.toml");
    let scenario = |extra: &str, policies: &str| {
        format!(
            "[workload]\nsource = \"conv\"\n{extra}\n[replay]\nwindows = 2\npolicies = [{policies}]\ninclude_overlap = false\n"
        )
    };
    // `replay --config` of `body`: its JSON rows, or (`fails`) its error.
    let replay = |body: &str| -> Value {
        std::fs::write(&cfg, body).unwrap();
        let mut c = hs(&store);
        c.args(["replay", "--no-save", "--format", "json", "--config"])
            .arg(&cfg);
        serde_json::from_str(&ok(c)).expect("JSON")
    };
    let refused = |body: &str| -> String {
        std::fs::write(&cfg, body).unwrap();
        let mut c = hs(&store);
        c.args(["replay", "--no-save", "--config"]).arg(&cfg);
        String::from_utf8_lossy(&fails(c).stderr).into_owned()
    };
    let v = replay(&scenario(
        "",
        "\"hazard\", \"fastest\", \"cache-aware\", \"session-affinity\", \"bound\"",
    ));
    let rows = v.as_array().expect("rows");
    assert_eq!(rows.len(), 5);
    for r in rows {
        let hit = r["prefix_hit_rate"]
            .as_f64()
            .unwrap_or_else(|| panic!("{r}"));
        // Every conversation shares the 512-token system prompt: every policy hits.
        assert!(hit > 0.05 && hit < 1.0, "{}: hit rate {hit}", r["policy"]);
        assert!(r["prefill_tokens"].as_f64().is_some_and(|x| x > 0.0), "{r}");
    }
    // The table gains the hit rate and the destroyed state.
    let mut c = hs(&store);
    c.args(["replay", "--no-save", "--config"]).arg(&cfg);
    let table = ok(c);
    assert!(
        table.contains("hit_rate") && table.contains("destroyed_tok"),
        "{table}"
    );
    // The simple engine has no cache: a clear error naming the way out.
    let err = refused(&scenario("[hardware]\nengine = \"simple\"", "\"fastest\""));
    assert!(
        err.contains("prefix_cache") && err.contains("simple"),
        "{err}"
    );
    // Stateless on purpose: no prefix metrics.
    let v = replay(&scenario(
        "[hardware]\nengine = \"simple\"\nprefix_cache = false",
        "\"fastest\"",
    ));
    assert!(v[0]["prefix_hit_rate"].is_null(), "{}", v[0]);
    // A router on a workload without prefix blocks is refused.
    let err = refused(
        "[workload]\nsource = \"sample-requests\"\n[replay]\nwindows = 2\npolicies = [\"cache-aware\"]\n",
    );
    assert!(
        err.contains("cache-aware") && err.contains("prefix"),
        "{err}"
    );
}

#[test]
fn synth_conversation_checks_its_flags() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let out = tmp.path().join("x.jsonl");
    for (args, says) in [
        (vec!["--turns", "0.5"], "--turns"),
        (vec!["--think=0"], "--think"),
        (vec!["--max-prompt", "100"], "--max-prompt"),
    ] {
        let mut c = hs(&store);
        c.args(["synth", "workload", "--class", "conversation", "--out"])
            .arg(&out)
            .args(&args);
        let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let mut c = hs(&store);
    c.args(["synth", "workload", "--turns", "3", "--out"])
        .arg(&out);
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(err.contains("--class conversation"), "{err}");
    assert!(!out.exists(), "nothing written on a bad flag");
}

/// The TUI on a run with prefix caches: the Replay screen gains a hit-rate column (and, wide,
/// the destroyed state), the Request screen a line with the request's hit and the nodes that
/// held its prefix; a run without caches shows neither (the demo's snapshots).
#[test]
fn the_tui_shows_hit_rates_and_where_a_requests_prefix_was() {
    use crate::tui_common::{press, pump, render};
    use hazardserve::tui::app::App;
    use hazardserve::tui::loader::Loader;

    let tmp = tempfile::tempdir().unwrap();
    let store = conversations_store(tmp.path());
    let cfg = write(
        tmp.path(),
        "conv.toml",
        "[workload]\nsource = \"conv\"\n[replay]\nwindows = 2\npolicies = [\"fastest\", \"cache-aware\"]\ninclude_overlap = false\n",
    );
    let mut c = hs(&store);
    c.args(["-q", "replay", "--config"]).arg(&cfg);
    ok(c);
    let mut loader = Loader::new(&store);
    let mut app = App::new(None);
    pump(&mut app, &mut loader);
    press(&mut app, &mut loader, "4");
    let replay = render(&app, 120, 40);
    let header = replay
        .lines()
        .find(|l| l.contains("policy") && l.contains("mean completion"))
        .unwrap_or_else(|| panic!("no policy table:\n{replay}"));
    assert!(header.contains(" hit"), "{header}");
    let row = replay
        .lines()
        .find(|l| l.contains("cache-aware"))
        .unwrap_or_else(|| panic!("no cache-aware row:\n{replay}"));
    let last = row.trim_end().trim_end_matches('│').trim_end();
    assert!(last.ends_with('%'), "{row}");
    // Wide enough for every column: the destroyed state too.
    let wide = render(&app, 200, 48);
    assert!(
        wide.contains("prefix hit") && wide.contains("destroyed/w"),
        "{wide}"
    );
    press(&mut app, &mut loader, "5");
    let request = render(&app, 160, 48);
    let line = request
        .lines()
        .find(|l| l.contains("prompt tokens from cache"))
        .unwrap_or_else(|| panic!("no prefix line:\n{request}"));
    // Every conversation opens with the shared system prompt: by the time a request is
    // eventful enough to be listed, some node holds it.
    assert!(line.contains("held at placement by"), "{line}");
    // The first holder: a node's name and the prompt tokens it held.
    let first = line
        .split("held at placement by ")
        .nth(1)
        .and_then(|h| h.split([',', '(']).next())
        .expect("holders");
    let mut words = first.split_whitespace();
    let (name, tokens) = (
        words.next(),
        words.next().and_then(|t| t.parse::<u64>().ok()),
    );
    assert!(
        name.is_some_and(|n| !n.is_empty()) && tokens.is_some_and(|t| t > 0),
        "{line}"
    );

    // The run's report has the prefix-cache section, its table and both plots.
    let out = tmp.path().join("report");
    let mut c = hs(&store);
    c.args(["-q", "report", "--out"]).arg(&out);
    ok(c);
    let md = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert!(md.contains("## Prefix caches"), "{md}");
    let section = md.split("## Prefix caches").nth(1).expect("section");
    assert!(
        section.contains("cache-aware") && section.contains("hit rate"),
        "{section}"
    );
    for svg in ["prefix-hit-rate.svg", "cache-destroyed.svg"] {
        let plot = std::fs::read_to_string(out.join(svg)).expect(svg);
        assert!(
            plot.contains("cache-aware") && plot.contains("fastest"),
            "{svg}"
        );
    }
}
