//! Qwen-Bailian anonymised request traces (Alibaba Cloud Model Studio; Wang et al., "KVCache
//! Cache in the Wild", USENIX ATC '25; Apache-2.0): JSON lines `{"chat_id": n,
//! "parent_chat_id": n, "timestamp": s, "input_length": n, "output_length": n, "type": "...",
//! "turn": n, "hash_ids": [...]}`. `parent_chat_id` is -1 for a conversation's first turn,
//! else the chat this one continues; `hash_ids` are the prompt's prefix blocks of 16 tokens,
//! kept as [`Request::prefix_blocks`]. A request's conversation
//! ([`Request::conversation_id`]) is the chat id of its first turn, followed up the parents.
//! Each file is one trace (the published files number their chats from the start each): a
//! parent is looked up in its child's file only, and with several files a conversation id is
//! the file's name and the chat id (`traceA.jsonl:17`). Arrivals are the `timestamp` seconds
//! (the trace's own offsets).
//!
//! A line is rejected, naming its file and line, when it is not valid UTF-8 or not such an
//! object (a field missing or of the wrong type), its timestamp is negative or not finite, a
//! length is negative, it has more prefix blocks than its prompt fills, its chat id is negative
//! or appeared before in its file, or its parent (neither -1 nor a chat id) is not a chat on an
//! earlier line of its file (a child before its parent), was rejected itself, or arrives after
//! it. Under `--strict` the first such line is the error and
//! nothing is ingested.

use std::collections::HashMap;

use serde::Deserialize;

use super::{json_lines, prefix_fits, Request, Workload, WorkloadOptions};
use crate::{InputFile, Result};

/// Tokens per `hash_ids` block.
pub const BLOCK_TOKENS: u32 = 16;

/// `parent_chat_id` of a conversation's first turn.
const ROOT: i64 = -1;

#[derive(Deserialize)]
struct Line {
    chat_id: i64,
    parent_chat_id: i64,
    timestamp: f64,
    input_length: i64,
    output_length: i64,
    /// The request kind (text, image, search, file): checked, not kept.
    #[serde(rename = "type")]
    _kind: String,
    /// The turn's number in its conversation: checked, not kept.
    #[serde(rename = "turn")]
    _turn: u32,
    hash_ids: Vec<i64>,
}

/// A chat id seen on an earlier line: where, and its conversation and arrival when the line
/// was accepted.
struct Seen {
    file: String,
    line: u64,
    accepted: Option<(i64, f64)>,
}

/// Whether the first line is a JSON object with the Qwen-Bailian keys.
pub fn sniff(file: &InputFile) -> bool {
    let s = file.sniff_head().split('\n').next().unwrap_or_default();
    s.trim_start().starts_with('{') && s.contains("\"chat_id\"") && s.contains("\"parent_chat_id\"")
}

/// A token count of field `name`: non-negative and at most `u32::MAX`.
fn length(name: &str, v: i64) -> std::result::Result<u32, String> {
    if v < 0 {
        return Err(format!("{name} {v} is negative"));
    }
    u32::try_from(v).map_err(|_| format!("{name} {v} is larger than 4294967295"))
}

/// The accepted request of line `l`, or why it is rejected; `chats` holds the earlier lines.
fn check(l: &Line, chats: &HashMap<i64, Seen>) -> std::result::Result<(i64, u32, u32), String> {
    if !(l.timestamp.is_finite() && l.timestamp >= 0.0) {
        return Err(format!(
            "timestamp {} is negative or not finite",
            l.timestamp
        ));
    }
    let prompt = length("input_length", l.input_length)?;
    let output = length("output_length", l.output_length)?;
    prefix_fits(l.hash_ids.len(), BLOCK_TOKENS, prompt)?;
    if l.chat_id < 0 {
        return Err(format!("chat id {} is negative", l.chat_id));
    }
    if l.parent_chat_id < ROOT {
        return Err(format!(
            "parent_chat_id {} is neither -1 (a first turn) nor a chat id",
            l.parent_chat_id
        ));
    }
    if let Some(first) = chats.get(&l.chat_id) {
        return Err(format!(
            "chat id {} appears again (first on {} line {})",
            l.chat_id, first.file, first.line
        ));
    }
    if l.parent_chat_id == ROOT {
        return Ok((l.chat_id, prompt, output));
    }
    match chats.get(&l.parent_chat_id) {
        None => Err(format!(
            "its parent chat {} is not on an earlier line (a child before its parent)",
            l.parent_chat_id
        )),
        Some(Seen {
            file,
            line,
            accepted: None,
        }) => Err(format!(
            "its parent chat {} ({file} line {line}) was rejected",
            l.parent_chat_id
        )),
        Some(Seen {
            accepted: Some((_, at)),
            ..
        }) if *at > l.timestamp => Err(format!(
            "it arrives at {} s, before its parent chat {} (at {at} s)",
            l.timestamp, l.parent_chat_id
        )),
        Some(Seen {
            accepted: Some((conversation, _)),
            ..
        }) => Ok((*conversation, prompt, output)),
    }
}

/// Parses Qwen-Bailian JSON lines, each file one trace.
pub fn parse(files: &[InputFile], options: &WorkloadOptions) -> Result<Workload> {
    // The chats of the file being read (cleared at each new file).
    let mut chats: HashMap<i64, Seen> = HashMap::new();
    let mut reading = String::new();
    let several = files.len() > 1;
    json_lines(files, options, "Qwen-Bailian", |f, name, line, l: Line| {
        if f.rel != reading {
            chats.clear();
            reading.clone_from(&f.rel);
        }
        let checked = check(&l, &chats);
        // The first line of a chat id is what a later duplicate or child refers to.
        chats.entry(l.chat_id).or_insert(Seen {
            file: name.to_string(),
            line,
            accepted: checked
                .as_ref()
                .ok()
                .map(|&(conversation, _, _)| (conversation, l.timestamp)),
        });
        let (conversation, prompt, output) = checked?;
        let request = Request {
            conversation_id: Some(if several {
                format!("{}:{conversation}", f.rel)
            } else {
                conversation.to_string()
            }),
            ..Request::plain(l.timestamp, prompt, output, f.rel.clone())
        };
        Ok(request.with_prefix(l.hash_ids, BLOCK_TOKENS))
    })
}

#[cfg(test)]
mod tests {
    use super::super::{sniff as sniff_workload, WorkloadFormat};
    use super::*;

    /// A JSON line of chat `id` continuing `parent` at `t` seconds.
    fn chat(id: i64, parent: i64, t: f64, input: i64, blocks: &[i64]) -> String {
        format!(
            "{{\"chat_id\": {id}, \"parent_chat_id\": {parent}, \"timestamp\": {t}, \
             \"input_length\": {input}, \"output_length\": 7, \"type\": \"text\", \
             \"turn\": 1, \"hash_ids\": {blocks:?}}}\n"
        )
    }

    fn file(body: &str) -> InputFile {
        InputFile::from_bytes(
            "q.jsonl".into(),
            "q.jsonl",
            body.as_bytes().to_vec(),
            String::new(),
        )
    }

    #[test]
    fn turns_join_their_first_turns_conversation() {
        let body = [
            chat(10, ROOT, 0.5, 40, &[1, 2, 3]),
            chat(11, ROOT, 1.0, 16, &[9]),
            chat(12, 10, 2.25, 70, &[1, 2, 3, 4, 5]),
            chat(13, 12, 4.0, 90, &[1, 2, 3, 4, 5, 6]),
            chat(14, 11, 5.0, 0, &[]),
        ]
        .concat();
        let f = file(&body);
        assert!(sniff(&f));
        assert_eq!(
            sniff_workload(std::slice::from_ref(&f)),
            Some(WorkloadFormat::QwenBailian)
        );
        let w = parse(&[f], &WorkloadOptions::default()).unwrap();
        assert!(w.rejects.is_empty(), "{:?}", w.rejects);
        let conv: Vec<Option<&str>> = w
            .requests
            .iter()
            .map(|r| r.conversation_id.as_deref())
            .collect();
        assert_eq!(
            conv,
            [Some("10"), Some("11"), Some("10"), Some("10"), Some("11")]
        );
        assert_eq!(w.requests[2].prefix_blocks, vec![1, 2, 3, 4, 5]);
        assert_eq!(w.requests[2].block_tokens, 16);
        assert_eq!(w.requests[2].arrival_s, 2.25);
        assert_eq!(w.requests[4].block_tokens, 0);
    }

    #[test]
    fn each_file_is_its_own_trace() {
        let one = |rel: &str, body: String| {
            InputFile::from_bytes(rel.into(), rel, body.into_bytes(), String::new())
        };
        // Both files number their chats from 1; b's chat 2 continues b's chat 1, not a's.
        let b = [chat(1, ROOT, 0.0, 16, &[7]), chat(2, 1, 1.0, 32, &[7, 8])].concat();
        let files = [
            one("a.jsonl", chat(1, ROOT, 0.0, 16, &[1])),
            one("b.jsonl", b),
        ];
        let w = parse(&files, &WorkloadOptions::default()).unwrap();
        assert!(w.rejects.is_empty(), "{:?}", w.rejects);
        let conv: Vec<&str> = w
            .requests
            .iter()
            .map(|r| r.conversation_id.as_deref().unwrap())
            .collect();
        assert_eq!(conv, ["a.jsonl:1", "b.jsonl:1", "b.jsonl:1"]);
        // A parent in another file is not this file's chat.
        let files = [
            one("a.jsonl", chat(1, ROOT, 0.0, 16, &[1])),
            one("c.jsonl", chat(2, 1, 1.0, 32, &[7, 8])),
        ];
        let w = parse(&files, &WorkloadOptions::default()).unwrap();
        assert_eq!(w.requests.len(), 1);
        assert!(
            w.rejects[0].reason.contains("not on an earlier line"),
            "{:?}",
            w.rejects
        );
    }

    #[test]
    fn bad_lines_are_rejected_with_their_reason_and_children_follow_their_parents() {
        let body = [
            chat(1, ROOT, 0.0, 32, &[1, 2]),
            // A prefix longer than the prompt: 33 tokens fill three blocks of 16.
            chat(2, ROOT, 1.0, 33, &[1, 2, 3, 4]),
            // A child of the rejected chat.
            chat(3, 2, 2.0, 40, &[1]),
            // A child before its parent.
            chat(4, 5, 3.0, 40, &[1]),
            chat(5, ROOT, 3.5, 40, &[1]),
            // A negative length.
            chat(6, ROOT, 4.0, -3, &[]),
            // A chat id seen before.
            chat(1, ROOT, 5.0, 40, &[]),
            // A missing field.
            "{\"chat_id\": 7, \"parent_chat_id\": -1, \"timestamp\": 6, \"input_length\": 4, \
             \"output_length\": 1, \"type\": \"text\", \"hash_ids\": []}\n"
                .to_string(),
            // A child that arrives before its parent.
            chat(8, 5, 3.0, 40, &[1]),
            chat(9, 1, 9.0, 64, &[1, 2, 3, 4]),
            // A negative chat id, a parent id below -1, a turn that is not a number.
            chat(-4, ROOT, 10.0, 16, &[]),
            chat(10, -2, 10.0, 16, &[]),
            chat(11, ROOT, 10.0, 16, &[]).replace("\"turn\": 1", "\"turn\": null"),
        ]
        .concat();
        let f = file(&body);
        let w = parse(std::slice::from_ref(&f), &WorkloadOptions::default()).unwrap();
        let kept: Vec<Option<&str>> = w
            .requests
            .iter()
            .map(|r| r.conversation_id.as_deref())
            .collect();
        assert_eq!(kept, [Some("1"), Some("5"), Some("1")]);
        let why: Vec<(u64, &str)> = w
            .rejects
            .iter()
            .map(|r| (r.line, r.reason.as_str()))
            .collect();
        let expect: [(u64, &str); 10] = [
            (
                2,
                "4 prefix blocks of 16 tokens are longer than the prompt of 33 tokens",
            ),
            (3, "parent chat 2 (q.jsonl line 2) was rejected"),
            (4, "parent chat 5 is not on an earlier line"),
            (6, "input_length -3 is negative"),
            (7, "chat id 1 appears again (first on q.jsonl line 1)"),
            (8, "missing field `turn`"),
            (9, "before its parent chat 5"),
            (11, "chat id -4 is negative"),
            (12, "parent_chat_id -2 is neither -1"),
            (13, "invalid type: null, expected u32 (column 123)"),
        ];
        assert_eq!(why.len(), expect.len(), "{why:?}");
        for ((line, reason), (want_line, want)) in why.iter().zip(expect) {
            assert_eq!(*line, want_line, "{reason}");
            assert!(reason.contains(want), "line {line}: {reason}");
        }
        // Under --strict the first bad line is the error, naming the file and line.
        let strict = WorkloadOptions {
            strict: true,
            ..WorkloadOptions::default()
        };
        let e = parse(&[f], &strict).unwrap_err().to_string();
        assert!(
            e.contains("q.jsonl:2:") && e.contains("longer than the prompt"),
            "{e}"
        );
    }
}
