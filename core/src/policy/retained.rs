//! The retained-state term: what a node's end costs a conversation after its request
//! completed.
//!
//! The design's `L_i` integrates the unplanned loss over `[0, T_i]`, while the request runs.
//! With prefix caching, the request's prompt blocks stay cached on the node after it
//! completes, and the conversation's next turn, arriving a gap `G` after this one, reads them
//! there instead of prefilling them, if the node is still up. So placing a turn on node `i`
//! also places its conversation's state there, and a node's end between the turn's
//! completion and the next turn's arrival costs that next turn the prefill of this turn's
//! prompt on another node:
//!
//! `R_i = C_re * sum_{c = 1..16} (m / 16) [g_c > T_i] (S_i(T_i | a_i) - S_i(g_c | a_i))`
//!
//! with `m = P(G < infinity)` the chance that a next turn comes at all, `g_c` the midpoints
//! of 16 equal-probability cells of the gap's distribution given that it comes (the
//! `(c - 1/2) / 16` quantiles of `G | G < infinity`), `S_i(t | a_i)` the node's conditional
//! survival under the policy's risk model ([`super::cost::RiskModel`]; an announced end is
//! certain: `S = 0` from it on), and `C_re = P_r / p_fb` the re-prefill of the turn's prompt
//! at the fallback's prefill rate, the design's `U` without the stall (the next turn pays it
//! as prefill work, not as an interruption). A next turn that would arrive before the turn
//! completes (`g_c <= T_i`) finds the request still running (its loss is in `L_i`).
//!
//! The gap's distribution ([`ReuseGap`]) is the Kaplan-Meier estimate of the time from a
//! turn's arrival to its conversation's next turn's, over the workload's training history,
//! with a turn whose conversation shows no later turn censored at the end of that history
//! (its last turn is not known to be the last): `m` is one minus the estimate's plateau.
//!
//! Sources: the design's `L_i` and its 16-cell sum (`../shared/design/`); the cache's
//! behaviour after a request completes is vLLM's automatic prefix caching (freed blocks stay
//! cached until evicted); the gap after Mooncake's conversation trace (FAST '25), where a
//! reused prefix was last used a median of two minutes earlier.

use serde::{Deserialize, Serialize};

/// Cells of the gap's distribution.
pub const GAP_CELLS: usize = 16;

/// The distribution of the gap from a turn's arrival to its conversation's next turn's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReuseGap {
    /// `m`: the chance that a next turn comes.
    pub mass: f64,
    /// The gap's `(c - 1/2) / 16` quantiles given that a next turn comes, seconds, ascending.
    pub cells: [f64; GAP_CELLS],
}

impl ReuseGap {
    /// From a survival curve of the gap (a Kaplan-Meier step function, `times` ascending
    /// with the survival `values` just after each): `m = 1 - S(last)`, and cell `c` at the
    /// first time where `1 - S >= m (c - 1/2) / 16`. `None` without any event (`m = 0`).
    pub fn from_steps(times: &[f64], values: &[f64]) -> Option<ReuseGap> {
        let last = values.last().copied()?;
        let mass = (1.0 - last).clamp(0.0, 1.0);
        if !(mass > 0.0) {
            return None;
        }
        let mut cells = [0.0; GAP_CELLS];
        for (c, cell) in cells.iter_mut().enumerate() {
            let q = mass * (c as f64 + 0.5) / GAP_CELLS as f64;
            *cell = times
                .iter()
                .zip(values)
                .find(|&(_, &s)| 1.0 - s >= q - 1e-12)
                .map_or(f64::INFINITY, |(&t, _)| t);
        }
        Some(ReuseGap { mass, cells })
    }

    /// `R_i` of a turn that completes after `t` seconds and whose prompt takes
    /// `reprefill_s` seconds to prefill on the fallback (module documentation), on a node
    /// whose conditional survival `t` seconds from now is `survive(t)` (the policy's risk
    /// model, an announced end included: `super::policies` builds it).
    pub fn loss(&self, t: f64, reprefill_s: f64, survive: impl Fn(f64) -> f64) -> f64 {
        if !(reprefill_s > 0.0) || !t.is_finite() {
            return 0.0;
        }
        let at_t = survive(t);
        let w = self.mass / GAP_CELLS as f64;
        let mut sum = 0.0;
        for &g in &self.cells {
            if g > t {
                sum += w * (at_t - survive(g)).max(0.0);
            }
        }
        reprefill_s * sum
    }
}

/// `C_re` of a turn with a `prompt_tokens` prompt on a fallback prefilling `p_fb` tokens/s
/// (0 for a rate that is not positive).
#[inline]
pub fn reprefill_s(prompt_tokens: u64, p_fb: f64) -> f64 {
    if p_fb > 0.0 {
        prompt_tokens as f64 / p_fb
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Half the turns have a next turn, after 100 s (8 cells) or 300 s (8 cells).
    fn gap() -> ReuseGap {
        ReuseGap::from_steps(&[100.0, 300.0], &[0.75, 0.5]).expect("events")
    }

    #[test]
    fn cells_are_the_quantiles_of_the_gap_given_a_next_turn() {
        let g = gap();
        assert!((g.mass - 0.5).abs() < 1e-12);
        assert_eq!(&g.cells[..8], &[100.0; 8]);
        assert_eq!(&g.cells[8..], &[300.0; 8]);
        assert_eq!(ReuseGap::from_steps(&[5.0], &[1.0]), None);
    }

    #[test]
    fn the_loss_is_the_hand_computation() {
        // A node with S(t | a) = e^(-t / 1000).
        let s = |x: f64| (-x / 1000.0f64).exp();
        let g = gap();
        let t = 10.0;
        let want = 20.0 * (0.25 * (s(t) - s(100.0)) + 0.25 * (s(t) - s(300.0)));
        let got = g.loss(t, 20.0, s);
        assert!((got - want).abs() < 1e-12, "{got} against {want}");
        // A turn that outlasts the first gap pays only the second cell's.
        let got = g.loss(200.0, 20.0, s);
        let want = 20.0 * 0.25 * (s(200.0) - s(300.0));
        assert!((got - want).abs() < 1e-12);
        // An immortal node loses nothing; nothing to re-prefill, nothing lost.
        assert_eq!(g.loss(t, 20.0, |_| 1.0), 0.0);
        assert_eq!(g.loss(t, 0.0, s), 0.0);
        assert!((reprefill_s(2000, 4000.0) - 0.5).abs() < 1e-15);
        assert_eq!(reprefill_s(2000, 0.0), 0.0);
    }
}
