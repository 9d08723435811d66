//! Sample multi-turn conversations with prefix structure, written in the Qwen-Bailian trace
//! schema (JSON lines: `chat_id`, `parent_chat_id`, `timestamp`, `input_length`,
//! `output_length`, `type`, `turn`, `hash_ids` of 16-token blocks), which the `qwen-bailian`
//! adapter reads.
//!
//! A conversation starts with a shared system prompt and a first user message; each later
//! turn's prompt is the whole history (the previous prompt, the previous answer) plus a new
//! user message, as chat templates send it; the prompt's blocks are content-addressed, so a
//! turn's blocks repeat its parent's full prompt blocks and the system prompt's blocks are
//! shared by every conversation. Each parameter and its source:
//!
//! | parameter | default | source |
//! |---|---|---|
//! | conversation starts | Gamma, 0.5 /s, CV 1.09 | arrivals as the Azure LLM inference trace 2023 `conv` (CV measured there) |
//! | turns per conversation | geometric, mean 2.0 | LMSYS-Chat-1M (Zheng et al., ICLR 2024, Table 1: 2.0 turns per conversation) |
//! | time between a turn's arrival and the next's | log-normal, ln-mean 4.878, ln-sd 0.978 (median 131 s) | measured on the Mooncake conversation trace (FAST '25): a request's parent is the latest earlier request sharing its longest prefix beyond the first block; median 123 s, p90 483 s, p99 1,473 s |
//! | system prompt | 512 tokens, shared by all | every request of the Mooncake conversation trace starts with the same 512-token block (hash id 0) and no two share a second one unless one continues the other |
//! | first user message | log-normal, ln-mean 6.633, ln-sd 0.985 | prompt lengths of Azure conv 2023 |
//! | later user message | log-normal, ln-mean 3.738, ln-sd 1.0 (mean 69 tokens) | LMSYS-Chat-1M: 69.5 tokens per user prompt on average |
//! | answer | log-normal, ln-mean 5.019, ln-sd 0.859, at most 1,000 | output lengths of Azure conv 2023 (mean 218; LMSYS-Chat-1M: 214.5) |
//! | context | at most 32,768 tokens | a conversation ends before a turn whose prompt would exceed it |

use std::fmt::Write as _;

use crate::rng::Rng;

/// Tokens per `hash_ids` block (the Qwen-Bailian schema's).
pub const CONVERSATION_BLOCK_TOKENS: u64 = 16;

/// Parameters of synthetic conversations (defaults: the module documentation's table).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConversationParams {
    /// Conversation starts per second.
    pub rate: f64,
    /// Coefficient of variation of the times between conversation starts.
    pub cv: f64,
    /// Length of the trace, seconds: conversations start and turns arrive before it.
    pub duration_s: f64,
    /// Mean turns per conversation (geometric, at least 1).
    pub mean_turns: f64,
    /// ln(seconds) between a turn's arrival and the next's: mean and standard deviation.
    pub think_mu: f64,
    /// See `think_mu`.
    pub think_sigma: f64,
    /// Tokens of the system prompt every conversation starts with.
    pub system_tokens: u32,
    /// ln(tokens) of a conversation's first user message: mean and standard deviation.
    pub first_mu: f64,
    /// See `first_mu`.
    pub first_sigma: f64,
    /// ln(tokens) of a later user message.
    pub turn_mu: f64,
    /// See `turn_mu`.
    pub turn_sigma: f64,
    /// ln(tokens) of an answer.
    pub output_mu: f64,
    /// See `output_mu`.
    pub output_sigma: f64,
    /// Largest answer, tokens.
    pub max_output: u32,
    /// Largest prompt (the context window), tokens.
    pub max_prompt: u32,
}

impl Default for ConversationParams {
    fn default() -> Self {
        ConversationParams {
            rate: 0.5,
            cv: 1.09,
            duration_s: 3600.0,
            mean_turns: 2.0,
            think_mu: 4.878,
            think_sigma: 0.978,
            system_tokens: 512,
            first_mu: 6.633,
            first_sigma: 0.985,
            turn_mu: 3.738,
            turn_sigma: 1.0,
            output_mu: 5.019,
            output_sigma: 0.859,
            max_output: 1_000,
            max_prompt: 32_768,
        }
    }
}

/// What a generated conversation trace holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConversationCounts {
    /// Requests (turns).
    pub requests: usize,
    /// Conversations.
    pub conversations: usize,
    /// Conversations ended early because the next prompt would exceed `max_prompt`.
    pub context_full: usize,
}

/// One turn before it is written.
struct Turn {
    at: f64,
    chat: u64,
    parent: i64,
    turn: u32,
    input: u64,
    output: u64,
    blocks: Vec<u64>,
}

/// Generates the JSON-lines text of conversations (in arrival order) and what it holds.
pub fn conversations_jsonl(p: &ConversationParams, seed: u64) -> (String, ConversationCounts) {
    let mut rng = Rng::stream(seed, 500);
    let shape = 1.0 / (p.cv * p.cv).max(1e-6);
    let scale = 1.0 / (p.rate * shape);
    let bt = CONVERSATION_BLOCK_TOKENS;
    let system = u64::from(p.system_tokens);
    // The system prompt's full blocks are the same content in every conversation.
    let system_blocks: Vec<u64> = (0..system / bt).collect();
    let mut next_block = system / bt;
    let mut fresh = |n: usize, out: &mut Vec<u64>| {
        for _ in 0..n {
            out.push(next_block);
            next_block += 1;
        }
    };
    // P(another turn) of a geometric number of turns with this mean.
    let more = (1.0 - 1.0 / p.mean_turns.max(1.0)).clamp(0.0, 1.0);
    let len = |rng: &mut Rng, mu: f64, sigma: f64| rng.lognormal(mu, sigma).round().max(1.0) as u64;
    let mut counts = ConversationCounts::default();
    let mut turns: Vec<Turn> = Vec::new();
    let mut t = 0.0;
    let mut chat = 0u64;
    loop {
        t += rng.gamma(shape, scale);
        if t >= p.duration_s {
            break;
        }
        counts.conversations += 1;
        let mut at = t;
        let mut input = system + len(&mut rng, p.first_mu, p.first_sigma);
        let mut parent: Option<(u64, u64, u64, usize)> = None; // chat, input, output, turn index
        let mut k = 1u32;
        loop {
            if input > u64::from(p.max_prompt) {
                counts.context_full += 1;
                break;
            }
            let output = len(&mut rng, p.output_mu, p.output_sigma).min(u64::from(p.max_output));
            // Blocks: the parent's full prompt blocks again (the same content), then new ones.
            let mut blocks = match parent {
                Some((_, pin, _, idx)) => turns[idx].blocks[..(pin / bt) as usize].to_vec(),
                None => system_blocks.clone(),
            };
            let n = input.div_ceil(bt) as usize;
            let have = blocks.len();
            fresh(n.saturating_sub(have), &mut blocks);
            blocks.truncate(n);
            turns.push(Turn {
                at,
                chat,
                parent: parent.map_or(-1, |(c, ..)| c as i64),
                turn: k,
                input,
                output,
                blocks,
            });
            counts.requests += 1;
            parent = Some((chat, input, output, turns.len() - 1));
            chat += 1;
            if rng.uniform() >= more {
                break;
            }
            at += rng.lognormal(p.think_mu, p.think_sigma);
            if at >= p.duration_s {
                break;
            }
            input += output + len(&mut rng, p.turn_mu, p.turn_sigma);
            k += 1;
        }
    }
    turns.sort_by(|a, b| a.at.total_cmp(&b.at).then(a.chat.cmp(&b.chat)));
    let mut out = String::new();
    for x in &turns {
        let _ = write!(
            out,
            "{{\"chat_id\": {}, \"parent_chat_id\": {}, \"timestamp\": {:.3}, \"input_length\": {}, \"output_length\": {}, \"type\": \"text\", \"turn\": {}, \"hash_ids\": [",
            x.chat, x.parent, x.at, x.input, x.output, x.turn
        );
        for (k, b) in x.blocks.iter().enumerate() {
            let _ = write!(out, "{}{b}", if k == 0 { "" } else { ", " });
        }
        out.push_str("]}\n");
    }
    (out, counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[derive(serde::Deserialize)]
    struct Line {
        chat_id: i64,
        parent_chat_id: i64,
        timestamp: f64,
        input_length: u64,
        output_length: u64,
        turn: u32,
        hash_ids: Vec<u64>,
    }

    fn lines(p: &ConversationParams, seed: u64) -> Vec<Line> {
        let (text, counts) = conversations_jsonl(p, seed);
        let v: Vec<Line> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        assert_eq!(v.len(), counts.requests);
        v
    }

    #[test]
    fn turns_extend_their_parents_and_share_the_system_prompt() {
        let p = ConversationParams {
            duration_s: 20_000.0,
            ..ConversationParams::default()
        };
        let v = lines(&p, 3);
        let by_id: HashMap<i64, &Line> = v.iter().map(|l| (l.chat_id, l)).collect();
        let mut prev = 0.0;
        let mut children = 0;
        for l in &v {
            assert!(l.timestamp >= prev, "arrival order");
            prev = l.timestamp;
            assert_eq!(l.hash_ids.len() as u64, l.input_length.div_ceil(16));
            assert_eq!(&l.hash_ids[..32], &(0..32).collect::<Vec<u64>>()[..]);
            if l.parent_chat_id >= 0 {
                children += 1;
                let parent = by_id[&l.parent_chat_id];
                assert!(parent.timestamp < l.timestamp, "a parent arrives first");
                assert_eq!(l.turn, parent.turn + 1);
                assert!(l.input_length > parent.input_length + parent.output_length);
                let full = (parent.input_length / 16) as usize;
                assert_eq!(&l.hash_ids[..full], &parent.hash_ids[..full]);
                // The parent's partial last block (if any) is different content now.
                if !parent.input_length.is_multiple_of(16) {
                    assert_ne!(l.hash_ids[full], parent.hash_ids[full]);
                }
            } else {
                assert_eq!(l.turn, 1);
            }
        }
        // Mean turns near the geometric mean of 2 (less: turns after the end are cut).
        let conversations = v.iter().filter(|l| l.parent_chat_id < 0).count();
        let mean = v.len() as f64 / conversations as f64;
        assert!((1.7..=2.1).contains(&mean), "mean turns {mean}");
        assert!(children > 1000);
        // Time between turns: median near e^4.878 = 131 s.
        let mut gaps: Vec<f64> = v
            .iter()
            .filter(|l| l.parent_chat_id >= 0)
            .map(|l| l.timestamp - by_id[&l.parent_chat_id].timestamp)
            .collect();
        gaps.sort_by(f64::total_cmp);
        let median = gaps[gaps.len() / 2];
        assert!((110.0..=155.0).contains(&median), "median gap {median} s");
    }

    #[test]
    fn a_seed_gives_the_same_text_and_the_context_window_ends_conversations() {
        let p = ConversationParams {
            max_prompt: 2_000,
            mean_turns: 6.0,
            ..ConversationParams::default()
        };
        assert_eq!(conversations_jsonl(&p, 9), conversations_jsonl(&p, 9));
        let (_, counts) = conversations_jsonl(&p, 9);
        assert!(counts.context_full > 0);
        assert!(lines(&p, 9).iter().all(|l| l.input_length <= 2_000));
    }
}
