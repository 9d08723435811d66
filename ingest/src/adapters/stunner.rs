//! STUNner smartphone sessions (`--format stunner`): per-user-week alternating on/off durations.
//!
//! # Input
//!
//! Text, one line per (user, window), whitespace separated:
//! `user_id first_online start_ms tz_h d1 d2 … dn` (Gossip Learning Framework
//! `res/trace/peersim_session_{80,100}.txt`). `first_online` is `1` when `d1` is an online
//! segment and `0` when offline; `start_ms` is the window start in Unix epoch milliseconds
//! (UTC); `tz_h` is the phone's UTC offset in hours (metadata only: the times are UTC); the
//! `dᵢ` are lengths in milliseconds of alternating online/offline segments.
//!
//! # Semantics (traces MANIFEST §8)
//!
//! Per user, lines are ordered by `start_ms`. Online segments are up-sessions
//! `[start_ms + Σ earlier dᵢ, … + dᵢ)`, ended by the phone going offline (event, cause
//! `offline`). A session that crosses a window boundary is split across two lines and is
//! **merged** back: when the next window starts exactly where the previous one ended and its
//! `first_online` equals the state of the previous window's last segment, the two windows are
//! contiguous. When they are not (a gap, or a state mismatch), the session open at the end of the
//! previous window is right-censored there (cause `observation-gap`) and the next window's first
//! online segment is left-truncated. The first online segment of a user's first line is
//! left-truncated (already online at 00:00 UTC); the last one of the user's last line, if
//! online, is right-censored (cause `observation-end`). Zero-length online segments are
//! dropped.
//!
//! Node keys are `<file stem_key>/<user_id>` — always prefixed, because the `_80` and `_100`
//! files are two criteria for the same users and must not collide when ingested together (and a
//! user's key does not depend on which other files are given). `group` = the file stem (the
//! criterion), `zone` = `UTC±h` from the user's first window. A user is observed from the start
//! of its first window to the end of its last one. Times are Unix seconds ([`TimeBase::Utc`]);
//! [`Kind::Mobile`].
//!
//! Rejected lines: too few fields, non-numeric fields, `first_online` not 0/1, negative
//! durations, a window with no segment, a duplicate window (same user and `start_ms`), a
//! window that overlaps the user's previous one, and a line that is not valid UTF-8.

use std::collections::HashMap;

use super::format::{Adapter, Format};
use crate::{
    IngestError, InputFile, Kind, NodeInfo, Options, Rejects, Result, Session, TimeBase, Trace,
};

/// The `stunner` adapter.
pub const FORMAT: Format = Format(&ADAPTER);

const ADAPTER: Adapter = Adapter {
    name: "stunner",
    about: "STUNner smartphone per-user-week alternating on/off durations",
    parse,
    sniff,
    keys_from_file_names: true,
};

/// Parses the files of one source.
pub fn parse(files: &[InputFile], options: &Options) -> Result<Trace> {
    let mut rejects = Rejects::new(options.strict);
    let mut trace = Trace::empty(Kind::Mobile, TimeBase::Utc);
    let mut any = false;
    for file in files {
        any |= parse_file(file, &mut trace, &mut rejects)?;
    }
    if !any {
        return Err(rejects.nothing_usable(IngestError::Empty(
            files.first().map(|f| f.display()).unwrap_or_default(),
        )));
    }
    trace.rejects = rejects.into_vec();
    Ok(trace)
}

/// Whether `file` looks like this format: the first non-empty line is a non-numeric user id,
/// `0|1`, an epoch-milliseconds window start, an integer UTC offset and integer durations.
pub fn sniff(file: &InputFile) -> bool {
    let head = file.sniff_head();
    let Some(line) = head.split('\n').map(str::trim).find(|l| !l.is_empty()) else {
        return false;
    };
    let toks: Vec<&str> = line.split_ascii_whitespace().take(8).collect();
    if toks.len() < 5 {
        return false;
    }
    let int = |s: &str| s.parse::<i64>().is_ok();
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    toks[0].parse::<f64>().is_err()
        && matches!(toks[1], "0" | "1")
        && digits(toks[2])
        && (11..=14).contains(&toks[2].len())
        && int(toks[3])
        && toks[4..].iter().all(|t| digits(t))
}

/// One accepted window line.
struct Window {
    user: usize,
    online_first: bool,
    start_ms: i64,
    tz_h: i64,
    /// Range of its durations in the shared buffer.
    durs: std::ops::Range<usize>,
    line: u64,
}

/// Parses one file; returns whether it held any window.
fn parse_file(file: &InputFile, trace: &mut Trace, rejects: &mut Rejects) -> Result<bool> {
    let display = file.display();
    let stem = file.stem_key();
    let group = {
        let name = file.file_name();
        let name = name.strip_suffix(".gz").unwrap_or(name);
        name.rsplit_once('.').map_or(name, |(a, _)| a).to_string()
    };
    let mut users: Vec<&str> = Vec::new();
    let mut user_index: HashMap<&str, usize> = HashMap::new();
    let mut windows: Vec<Window> = Vec::new();
    let mut durs: Vec<i64> = Vec::new();
    let mut raws: Vec<&str> = Vec::new();

    for line in file.lines() {
        let line_no = line.number;
        let raw = match line.text() {
            Ok(raw) => raw,
            Err(reason) => {
                rejects.reject(&display, line_no, &line.lossy(), reason)?;
                continue;
            }
        };
        if raw.trim().is_empty() {
            continue;
        }
        let mut toks = raw.split_ascii_whitespace();
        let (Some(user), Some(fo), Some(st), Some(tz)) =
            (toks.next(), toks.next(), toks.next(), toks.next())
        else {
            rejects.reject(
                &display,
                line_no,
                raw,
                "fewer than 4 fields (user_id first_online start_ms tz_h d1 …)",
            )?;
            continue;
        };
        let online_first = match fo {
            "1" => true,
            "0" => false,
            other => {
                rejects.reject(
                    &display,
                    line_no,
                    raw,
                    format!("first_online {other:?} (0 or 1 expected)"),
                )?;
                continue;
            }
        };
        let (Ok(start_ms), Ok(tz_h)) = (st.parse::<i64>(), tz.parse::<i64>()) else {
            rejects.reject(&display, line_no, raw, "start_ms / tz_h is not an integer")?;
            continue;
        };
        let mark = durs.len();
        let mut bad = None;
        for t in toks {
            match t.parse::<i64>() {
                Ok(d) if d >= 0 => durs.push(d),
                _ => {
                    bad = Some(t);
                    break;
                }
            }
        }
        if let Some(t) = bad {
            durs.truncate(mark);
            rejects.reject(
                &display,
                line_no,
                raw,
                format!("duration {t:?} is not a non-negative integer (ms)"),
            )?;
            continue;
        }
        if durs.len() == mark {
            rejects.reject(
                &display,
                line_no,
                raw,
                "window without any segment duration",
            )?;
            continue;
        }
        let u = *user_index.entry(user).or_insert_with(|| {
            users.push(user);
            users.len() - 1
        });
        windows.push(Window {
            user: u,
            online_first,
            start_ms,
            tz_h,
            durs: mark..durs.len(),
            line: line_no,
        });
        raws.push(raw);
    }
    if windows.is_empty() {
        trace.notes.push(format!("{}: no windows", file.rel));
        return Ok(false);
    }

    let mut order: Vec<usize> = (0..windows.len()).collect();
    order.sort_by_key(|&k| (windows[k].user, windows[k].start_ms, windows[k].line));
    let mut stats = Stats::default();
    let file_windows = FileWindows {
        windows: &windows,
        durs: &durs,
        raws: &raws,
        display: &display,
    };
    let mut i = 0;
    while i < order.len() {
        let u = windows[order[i]].user;
        let mut j = i;
        while j < order.len() && windows[order[j]].user == u {
            j += 1;
        }
        let node_id = format!("{stem}/{}", users[u]);
        let user_windows = &order[i..j];
        let node = user_sessions(
            &node_id,
            user_windows,
            &file_windows,
            rejects,
            &mut stats,
            &mut trace.sessions,
        )?;
        if let Some((from, to, tz)) = node {
            trace.nodes.push(NodeInfo {
                node_id,
                zone: Some(format!("UTC{tz:+}")),
                instance_type: None,
                group: Some(group.clone()),
                observed_from: ms(from),
                observed_to: ms(to),
            });
        }
        i = j;
    }
    trace.kept_records += stats.kept;
    trace.notes.push(format!(
        "{}: {} users, {} windows; {} online segments, {} of them continue a session across a \
         window boundary (merged); {} window gaps (censored/truncated); {} zero-length online \
         segments dropped",
        file.rel,
        users.len(),
        windows.len(),
        stats.online_segments,
        stats.merged,
        stats.gaps,
        stats.zero_dropped
    ));
    Ok(true)
}

fn ms(t: i64) -> f64 {
    t as f64 / 1000.0
}

#[derive(Default)]
struct Stats {
    online_segments: usize,
    merged: usize,
    gaps: usize,
    zero_dropped: usize,
    /// Windows used (not rejected as duplicate or overlapping).
    kept: u64,
}

/// One file's parsed windows, as [`user_sessions`] reads them: the windows, their segments'
/// durations (each window's `durs` range), each window's raw line and the file's name.
struct FileWindows<'a> {
    windows: &'a [Window],
    durs: &'a [i64],
    raws: &'a [&'a str],
    display: &'a str,
}

/// Walks one user's windows (in start order); returns its observation window and UTC offset,
/// or `None` when every window was rejected.
fn user_sessions(
    node_id: &str,
    user_windows: &[usize],
    file: &FileWindows<'_>,
    rejects: &mut Rejects,
    stats: &mut Stats,
    out: &mut Vec<Session>,
) -> Result<Option<(i64, i64, i64)>> {
    let FileWindows {
        windows,
        durs,
        raws,
        display,
    } = *file;
    // (start ms, left truncated) of the online session in progress.
    let mut open: Option<(i64, bool)> = None;
    // End and final state of the previous accepted window.
    let mut prev: Option<(i64, bool)> = None;
    let mut first: Option<(i64, i64)> = None;
    let mut prev_start: Option<i64> = None;
    let node: crate::model::NodeKey = node_id.into();
    let mut close =
        |out: &mut Vec<Session>, start: i64, end: i64, lt: bool, event: bool, cause: &str| {
            if end == start {
                stats.zero_dropped += 1;
                return;
            }
            out.push(Session {
                node_id: node.clone(),
                start: ms(start),
                end: ms(end),
                event,
                end_cause: crate::model::end_cause(cause),
                left_truncated: lt,
                entry_s: 0.0,
                resolution_s: 0.0,
            });
        };
    let mut gaps = 0usize;
    let mut merged = 0usize;
    let mut online_segments = 0usize;
    let mut kept = 0u64;
    for &k in user_windows {
        let w = &windows[k];
        if let Some((prev_end, _)) = prev {
            if w.start_ms < prev_end || Some(w.start_ms) == prev_start {
                let reason = if Some(w.start_ms) == prev_start {
                    format!(
                        "duplicate window: the user already has one starting at {} ms",
                        w.start_ms
                    )
                } else {
                    format!(
                        "window starting at {} ms overlaps the user's previous window (ends at {prev_end} ms)",
                        w.start_ms
                    )
                };
                rejects.reject(display, w.line, raws[k], reason)?;
                continue;
            }
        }
        prev_start = Some(w.start_ms);
        kept += 1;
        let contiguous =
            prev.is_some_and(|(end, state)| end == w.start_ms && state == w.online_first);
        if prev.is_some() && !contiguous {
            gaps += 1;
            if let (Some((s, lt)), Some((end, _))) = (open.take(), prev) {
                close(out, s, end, lt, false, "observation-gap");
            }
        }
        if first.is_none() {
            first = Some((w.start_ms, w.tz_h));
        }
        let segs = &durs[w.durs.clone()];
        let mut t = w.start_ms;
        let mut online = w.online_first;
        for (pos, &d) in segs.iter().enumerate() {
            let end = t.saturating_add(d);
            if online {
                online_segments += 1;
                if pos == 0 && contiguous && open.is_some() {
                    merged += 1;
                } else {
                    open = Some((t, pos == 0 && !contiguous));
                }
                if pos + 1 < segs.len() {
                    if let Some((s, lt)) = open.take() {
                        close(out, s, end, lt, true, "offline");
                    }
                }
            }
            t = end;
            online = !online;
        }
        // `online` has flipped once past the last segment: the last segment's state is `!online`.
        prev = Some((t, !online));
    }
    stats.gaps += gaps;
    stats.kept += kept;
    stats.merged += merged;
    stats.online_segments += online_segments;
    if let (Some((s, lt)), Some((end, _))) = (open.take(), prev) {
        close(out, s, end, lt, false, "observation-end");
    }
    Ok(match (first, prev) {
        (Some((from, tz)), Some((to, _))) => Some((from, to, tz)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(rel: &str, text: &str) -> InputFile {
        InputFile::from_text(rel, text)
    }

    fn run(files: &[InputFile]) -> Trace {
        let mut t = parse(files, &Options::default()).unwrap();
        t.canonicalize();
        t
    }

    const WEEK: i64 = 604_800_000;
    const S0: i64 = 1_402_358_400_000; // 2014-06-10 00:00 UTC

    fn line(user: &str, fo: u8, start: i64, durs: &[i64]) -> String {
        let d: Vec<String> = durs.iter().map(i64::to_string).collect();
        format!("{user} {fo} {start} 2 {}", d.join(" "))
    }

    fn spans(t: &Trace) -> Vec<(i64, i64, bool, bool, String)> {
        t.sessions
            .iter()
            .map(|s| {
                (
                    (s.start * 1000.0).round() as i64 - S0,
                    (s.end * 1000.0).round() as i64 - S0,
                    s.event,
                    s.left_truncated,
                    s.end_cause.to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn week_stitching_merges_boundary_sessions() {
        // Week 1: on 100, off 200, on (WEEK-300) → still online at the boundary.
        // Week 2 (listed first: lines are sorted): starts online: on 50, off 10, on 40 (short last window).
        let text = format!(
            "{}\n{}\n",
            line("user/a", 1, S0 + WEEK, &[50, 10, 40]),
            line("user/a", 1, S0, &[100, 200, WEEK - 300])
        );
        let t = run(&[file("peersim_session_80.txt", &text)]);
        assert_eq!(t.kind, Kind::Mobile);
        assert_eq!(t.time_base, TimeBase::Utc);
        assert_eq!(
            spans(&t),
            vec![
                (0, 100, true, true, "offline".to_string()),
                (300, WEEK + 50, true, false, "offline".to_string()),
                (
                    WEEK + 60,
                    WEEK + 100,
                    false,
                    false,
                    "observation-end".to_string()
                ),
            ]
        );
        let n = &t.nodes[0];
        assert_eq!(n.node_id, "peersim_session_80/user/a");
        assert_eq!(n.group.as_deref(), Some("peersim_session_80"));
        assert_eq!(n.zone.as_deref(), Some("UTC+2"));
        assert_eq!(
            (n.observed_from, n.observed_to),
            (ms(S0), ms(S0 + WEEK + 100))
        );
        assert!(
            t.notes[0].contains("1 of them continue a session"),
            "{}",
            t.notes[0]
        );
    }

    #[test]
    fn gap_or_state_mismatch_censors_and_truncates() {
        // Week 2 starts one day late: the open session is censored at the end of week 1 and
        // week 2's first online segment is left-truncated.
        let day = 86_400_000;
        let text = format!(
            "{}\n{}\n",
            line("u", 0, S0, &[100, WEEK - 100]),
            line("u", 1, S0 + WEEK + day, &[500, 500])
        );
        let t = run(&[file("s.txt", &text)]);
        assert_eq!(
            spans(&t),
            vec![
                (100, WEEK, false, false, "observation-gap".to_string()),
                (
                    WEEK + day,
                    WEEK + day + 500,
                    true,
                    true,
                    "offline".to_string()
                ),
            ]
        );
        // Contiguous in time but the next window starts offline: also a gap.
        let text = format!(
            "{}\n{}\n",
            line("u", 0, S0, &[100, WEEK - 100]),
            line("u", 0, S0 + WEEK, &[5, 7])
        );
        let t = run(&[file("s.txt", &text)]);
        assert_eq!(
            spans(&t),
            vec![
                (100, WEEK, false, false, "observation-gap".to_string()),
                (
                    WEEK + 5,
                    WEEK + 12,
                    false,
                    false,
                    "observation-end".to_string()
                ),
            ]
        );
    }

    #[test]
    fn files_do_not_collide() {
        let text = line("u", 1, S0, &[10, 20]);
        let t = run(&[
            file("peersim_session_80.txt", &text),
            file("peersim_session_100.txt", &text),
        ]);
        assert_eq!(t.nodes.len(), 2);
        assert_eq!(t.sessions.len(), 2);
        assert_ne!(t.nodes[0].node_id, t.nodes[1].node_id);
    }

    #[test]
    fn bad_lines_strict_and_lenient() {
        let text = format!(
            "{}\nu 2 {S0} 2 10 20\nu 1 notanumber 2 10\nu 1 {} 2 10 -5\nu 1 {} 2\n{}\nshort 1\n",
            line("u", 1, S0, &[10, 20]),
            S0 + WEEK,
            S0 + WEEK,
            line("u", 0, S0 + 15, &[10]),
        );
        let f = file("bad.txt", &text);
        let strict = Options {
            strict: true,
            ..Options::default()
        };
        let err = parse(std::slice::from_ref(&f), &strict)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("bad.txt:2:"), "{err}");
        assert!(err.contains("first_online"), "{err}");
        let t = run(&[f]);
        let mut lines: Vec<u64> = t.rejects.iter().map(|r| r.line).collect();
        lines.sort();
        assert_eq!(lines, vec![2, 3, 4, 5, 6, 7]);
        assert!(t
            .rejects
            .iter()
            .any(|r| r.line == 6 && r.reason.contains("overlaps")));
        assert_eq!(spans(&t), vec![(0, 10, true, true, "offline".to_string())]);
    }

    #[test]
    fn sniff_is_specific() {
        let f = file(
            "p.txt",
            &line("user_py_data_manip/00HK", 1, S0, &[1769049, 10067]),
        );
        assert!(sniff(&f));
        assert!(!sniff(&file(
            "e.tab",
            "0 0 655 3 10.000 0 1099755300 1099906200 8000\n"
        )));
        assert!(!sniff(&file("a.csv", "0,add,node1\n")));
        assert!(!sniff(&file("t.txt", "2021-12-10, 13:07:00, 80\n")));
    }
}
