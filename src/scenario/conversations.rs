//! A workload's conversations for the replay: each request's conversation key (the trace's
//! conversation id, or as its prefix blocks reveal it, [`crate::replay::infer_conversations`]),
//! and the gap from a turn to its conversation's next turn fitted on the workload's training
//! history ([`crate::policy::retained::ReuseGap`]) for the retained-state term.

use crate::policy::retained::ReuseGap;
use crate::replay::{infer_conversations, Prefix};
use crate::survival::km::KmFit;

/// FNV-1a of `s` (a stable key of a conversation id).
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

/// Each request's conversation key: its conversation id where the trace names one (any
/// request), else as its prefix blocks reveal it; empty when neither.
pub(crate) fn conversation_keys(
    ids: &[Option<String>],
    arrivals_us: &[i64],
    prefixes: &[Prefix],
) -> Vec<Option<u64>> {
    if ids.iter().any(Option::is_some) {
        return ids.iter().map(|c| c.as_deref().map(fnv)).collect();
    }
    if prefixes.iter().any(|p| !p.is_empty()) {
        return infer_conversations(arrivals_us, prefixes);
    }
    Vec::new()
}

/// The gap from a turn's arrival to its conversation's next turn's, over the turns that
/// arrived before `cut_s` (seconds on the workload's clock): a next turn that also arrived
/// before the cut is an event at the gap; a turn with no later turn before the cut is
/// censored at `cut_s - arrival` (its last turn is not known to be its last). The
/// Kaplan-Meier estimate of it as a [`ReuseGap`]; `None` without conversations or events.
pub(crate) fn fit_reuse_gap(
    arrivals_s: &[f64],
    conversations: &[Option<u64>],
    cut_s: f64,
) -> Option<ReuseGap> {
    let mut turns: Vec<(u64, f64)> = arrivals_s
        .iter()
        .zip(conversations)
        .filter_map(|(&t, c)| c.map(|c| (c, t)))
        .filter(|&(_, t)| t < cut_s)
        .collect();
    turns.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let mut durations = Vec::with_capacity(turns.len());
    let mut events = Vec::with_capacity(turns.len());
    for (k, &(c, t)) in turns.iter().enumerate() {
        match turns.get(k + 1) {
            Some(&(c2, t2)) if c2 == c => {
                durations.push((t2 - t).max(0.0));
                events.push(true);
            }
            _ => {
                durations.push((cut_s - t).max(0.0));
                events.push(false);
            }
        }
    }
    if !events.iter().any(|&e| e) {
        return None;
    }
    let km = KmFit::fit(&durations, &events).ok()?;
    ReuseGap::from_steps(km.timeline(), km.survival_values())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_ids_win_and_blocks_reveal_the_rest() {
        let ids = [Some("a".to_string()), None, Some("a".to_string())];
        let keys = conversation_keys(&ids, &[0, 1, 2], &[]);
        assert_eq!(keys[0], keys[2]);
        assert_eq!(keys[1], None);
        let p = |v: &[u64]| Prefix::new(16, v.to_vec());
        let keys = conversation_keys(&[None, None], &[0, 1], &[p(&[0, 1]), p(&[0, 1, 2])]);
        assert_eq!(keys, [Some(0), Some(0)]);
        assert!(conversation_keys(&[None], &[0], &[Prefix::default()]).is_empty());
    }

    #[test]
    fn gaps_are_events_and_last_turns_censored_at_the_cut() {
        // Conversation 1: turns at 0, 10, 40; conversation 2: one turn at 50; a turn of 1 after
        // the cut (100) is not seen.
        let arrivals = [0.0, 10.0, 40.0, 50.0, 150.0];
        let conv = [Some(1), Some(1), Some(1), Some(2), Some(1)];
        let g = fit_reuse_gap(&arrivals, &conv, 100.0).expect("events");
        // Durations 10 (event), 30 (event), 60 (censored), 50 (censored): KM drops to 3/4 at
        // 10 and to 3/4 * 2/3 = 1/2 at 30, so m = 1/2 with half its cells at each gap.
        assert!((g.mass - 0.5).abs() < 1e-12, "{}", g.mass);
        assert_eq!(&g.cells[..8], &[10.0; 8]);
        assert_eq!(&g.cells[8..], &[30.0; 8]);
        assert_eq!(fit_reuse_gap(&[0.0], &[Some(1)], 100.0), None);
    }
}
