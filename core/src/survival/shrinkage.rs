//! Per-node survival curves that borrow strength from the pooled fleet curve
//! (`shared/survival-golden/SHRINKAGE.md`, reference run `shrinkage_demo.py`).
//!
//! Notation: pooled distinct event times t_k (the last time where the pooled risk set empties,
//! h0 = 1, is dropped), pooled counts d0_k, Y0_k, Nelson–Aalen increments h0_k = d0_k / Y0_k,
//! Λ0(t) = Σ_{t_k ≤ t} h0_k, S_pool(t) = Π_{t_k ≤ t} (1 − h0_k); node counts d_ik and
//! Y_ik = #{node sessions with e_ij < t_k ≤ T_ij}.
//!
//! 1. **Beta-process prior centred on the pooled hazard** (Hjort 1990; c_k = M·S_pool(t_k−) is
//!    the Susarla–Van Ryzin / beta-Stacy case):
//!    ĥ_ik = (c_k h0_k + d_ik) / (c_k + Y_ik),  Ŝ_i(t) = Π_{t_k ≤ t} (1 − ĥ_ik).
//!    M → 0 gives the node KM, M → ∞ the pooled curve; where the node has nobody at risk
//!    (no data, or past its longest session) ĥ_ik = h0_k, so S_i(a+t)/S_i(a) is always defined.
//!    M is chosen by within-node K-fold cross-validation of the held-out sessions' binned
//!    log-likelihood (a 1-D grid over M), held-out counts being subtracted from the pooled counts.
//! 2. **Gamma-frailty empirical Bayes** (Clayton 1978; Nielsen et al. 1992): node hazard
//!    Z_i·h0, Z_i ~ Gamma(1/θ, 1/θ); with D_i = Σ_j δ_ij and E_i = Σ_j [Λ0(T_ij) − Λ0(e_ij)],
//!    Z_i | data ~ Gamma(1/θ + D_i, 1/θ + E_i) and the predictive curve is
//!    S̃_i(t) = ((1/θ + E_i) / (1/θ + E_i + Λ0(t)))^(1/θ + D_i).
//!    θ maximises the closed-form marginal likelihood (Gutierrez 2002)
//!    Σ_i [ln Γ(1/θ + D_i) − ln Γ(1/θ) + (1/θ) ln(1/θ) − (1/θ + D_i) ln(1/θ + E_i)].
//! 3. **Auto**: whichever of the two has the higher cross-validated log-likelihood.
//!
//! Scale: the beta process works on a grid of about `max_bins` bins of consecutive pooled
//! event times (exactly the pooled event times when there are no more than `max_bins` of them,
//! which reproduces the reference; otherwise bins of roughly equal pooled cumulative hazard,
//! each with H0_b ≤ 0.5 unless it is a single time). A coarse bin b uses the pooled
//! Nelson–Aalen increment H0_b = Σ_{k∈b} h0_k as its hazard and the hazard-weighted node
//! exposure Y_ib = Σ_{k∈b} Y_ik h0_k / H0_b as its at-risk count (Y_ib ≥ d_ib enforced).
//! One sort of all sessions by exit age yields the pooled table, every session's position on
//! the pooled grid and the frailty statistics (D_i, E_i) of all nodes. Node curves are
//! materialised on demand ([`ShrinkageModel::node_curve`]: O(bins + sessions of the node), a few
//! µs; cache them per node); the cross-validation uses at most `CvOptions::max_nodes` nodes.
//!
//! Size: over 800 lines because the three shrinkage estimators (beta process, gamma frailty,
//! cross-validated choice) share the binned per-node data and the cross-validation harness that
//! picks among them. Unit tests live in `shrinkage_tests.rs`.

use serde::Serialize;

use crate::rng::SplitMix64;
use crate::survival::curve::GRID_POINTS;
use crate::survival::km::{f64_key, key_f64, Count};
use crate::survival::numeric::minimize_bounded;
use crate::survival::{ConditionalSurvival, SurvivalData, SurvivalError};

// ------------------------------------------------------------------------------------------
// input layout
// ------------------------------------------------------------------------------------------

/// Sessions grouped by node in CSR layout (input order kept within each node).
#[derive(Debug, Clone)]
pub struct NodeSessions {
    offsets: Vec<usize>,
    duration: Vec<f64>,
    event: Vec<bool>,
    entry: Option<Vec<f64>>,
    /// Per session: number of kept pooled event times ≤ T (| [`EXACT`] when T is one of them).
    t_idx: Vec<u32>,
    /// Per session: number of kept pooled event times ≤ e (with entry times).
    e_idx: Option<Vec<u32>>,
}

/// The sessions of one node.
#[derive(Debug, Clone, Copy)]
pub struct NodeSlice<'a> {
    /// Session lengths (exit ages) T_ij.
    pub durations: &'a [f64],
    /// Event indicators δ_ij.
    pub events: &'a [bool],
    /// Entry ages e_ij (`None`: all 0, no left truncation).
    pub entry: Option<&'a [f64]>,
    t_idx: &'a [u32],
    e_idx: Option<&'a [u32]>,
}

impl NodeSlice<'_> {
    /// Number of sessions.
    pub fn len(&self) -> usize {
        self.durations.len()
    }

    /// True when the node has no session.
    pub fn is_empty(&self) -> bool {
        self.durations.is_empty()
    }

    /// Entry age of session j (0 without left truncation).
    #[inline]
    pub fn entry_at(&self, j: usize) -> f64 {
        self.entry.map_or(0.0, |e| e[j])
    }
}

/// Checks shrinkage input and returns the number of nodes.
fn check_input(
    groups: &[u32],
    data: &SurvivalData<'_>,
    n_nodes: Option<usize>,
) -> Result<usize, SurvivalError> {
    data.validate()?;
    if data.weights.is_some() {
        return Err(SurvivalError::InvalidArgument(
            "weights are not supported by the shrinkage estimators (replicate rows instead)".into(),
        ));
    }
    if groups.len() != data.len() {
        return Err(SurvivalError::LengthMismatch {
            what: "groups",
            expected: data.len(),
            got: groups.len(),
        });
    }
    if data.len() >= EXACT as usize {
        return Err(SurvivalError::InvalidArgument(
            "more than 2^31 - 1 sessions".into(),
        ));
    }
    let g_count = match n_nodes {
        Some(g) => g,
        None => groups.iter().map(|&g| g as usize + 1).max().unwrap_or(0),
    };
    for (i, &g) in groups.iter().enumerate() {
        if g as usize >= g_count {
            return Err(SurvivalError::GroupOutOfRange {
                index: i,
                group: g,
                n_groups: g_count,
            });
        }
        if data.durations[i] < 0.0 {
            return Err(SurvivalError::InvalidValue {
                index: i,
                reason: "negative session length",
            });
        }
        if data.entry.is_some_and(|e| e[i] < 0.0) {
            return Err(SurvivalError::InvalidValue {
                index: i,
                reason: "negative entry age",
            });
        }
    }
    Ok(g_count)
}

impl NodeSessions {
    /// CSR layout of the rows (stable counting sort by node); the grid index is filled by
    /// [`pooled_sweep`].
    fn build(groups: &[u32], data: &SurvivalData<'_>, g_count: usize) -> NodeSessions {
        let mut offsets = vec![0usize; g_count + 1];
        for &g in groups {
            offsets[g as usize + 1] += 1;
        }
        for g in 0..g_count {
            offsets[g + 1] += offsets[g];
        }
        let n = data.len();
        let mut pos = offsets.clone();
        let mut duration = vec![0.0; n];
        let mut event = vec![false; n];
        let mut entry = data.entry.map(|_| vec![0.0; n]);
        for (i, &g) in groups.iter().enumerate() {
            let p = pos[g as usize];
            pos[g as usize] += 1;
            duration[p] = data.durations[i];
            event[p] = data.events[i];
            if let (Some(dst), Some(src)) = (entry.as_mut(), data.entry) {
                dst[p] = src[i];
            }
        }
        NodeSessions {
            offsets,
            duration,
            event,
            entry,
            t_idx: Vec::new(),
            e_idx: None,
        }
    }

    /// Reorders a per-row column into this CSR order (same stable counting sort).
    fn permute<T: Copy + Default>(&self, groups: &[u32], values: &[T]) -> Vec<T> {
        let mut pos = self.offsets.clone();
        let mut out = vec![T::default(); values.len()];
        for (&g, &v) in groups.iter().zip(values) {
            out[pos[g as usize]] = v;
            pos[g as usize] += 1;
        }
        out
    }

    /// Number of nodes (including nodes without sessions).
    pub fn n_nodes(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Total number of sessions.
    pub fn n_sessions(&self) -> usize {
        self.duration.len()
    }

    /// Sessions of node `i` (empty when out of range).
    pub fn node(&self, i: usize) -> NodeSlice<'_> {
        let (lo, hi) = match (self.offsets.get(i), self.offsets.get(i + 1)) {
            (Some(&lo), Some(&hi)) => (lo, hi),
            _ => (0, 0),
        };
        NodeSlice {
            durations: &self.duration[lo..hi],
            events: &self.event[lo..hi],
            entry: self.entry.as_ref().map(|e| &e[lo..hi]),
            t_idx: self.t_idx.get(lo..hi).unwrap_or(&[]),
            e_idx: self.e_idx.as_ref().map(|e| &e[lo..hi]),
        }
    }
}

// ------------------------------------------------------------------------------------------
// pooled hazard
// ------------------------------------------------------------------------------------------

/// Pooled (fleet) hazard on the pooled distinct event times with Y0 > d0.
#[derive(Debug, Clone, Serialize)]
pub struct PooledHazard {
    /// Event times t_k.
    pub times: Vec<f64>,
    /// Y0_k = #{e < t_k ≤ T} (entrants at t_k are not at risk, no first-row exception).
    pub at_risk: Vec<Count>,
    /// d0_k.
    pub events: Vec<Count>,
    /// h0_k = d0_k / Y0_k.
    pub hazard: Vec<f64>,
    /// Nelson–Aalen Λ0(t_k) = Σ_{j ≤ k} h0_j.
    pub cumhaz: Vec<f64>,
    /// S_pool(t_k) = Π_{j ≤ k} (1 − h0_j).
    pub survival: Vec<f64>,
}

impl PooledHazard {
    /// Λ0(t) (0 before the first event time).
    #[inline]
    pub fn cumhaz_at(&self, t: f64) -> f64 {
        match self.times.partition_point(|&x| x <= t).checked_sub(1) {
            Some(k) => self.cumhaz[k],
            None => 0.0,
        }
    }
}

impl ConditionalSurvival for PooledHazard {
    /// S_pool(t) = Π_{t_k ≤ t} (1 − h0_k).
    fn survival(&self, t: f64) -> f64 {
        match self.times.partition_point(|&x| x <= t).checked_sub(1) {
            Some(k) => self.survival[k],
            None => 1.0,
        }
    }

    /// 0: flat after the last pooled event time (Y0 > d0 there, so S_pool > 0 everywhere).
    fn tail_hazard(&self) -> f64 {
        0.0
    }
}

/// One sweep over all sessions sorted by exit age (and entries sorted by entry age) builds the
/// pooled table (times with d0 > 0 and Y0 > d0), each node's D_i = Σ_j δ_ij and
/// E_i = Σ_j [Λ0(T_ij) − Λ0(e_ij)] (Λ0 right-continuous: it includes the hazard at x), and
/// each session's position on the pooled grid (so node curves need no search of the grid).
fn pooled_sweep(nodes: &mut NodeSessions) -> (PooledHazard, Vec<f64>, Vec<f64>) {
    let n = nodes.n_sessions();
    // durations >= 0, so the top bit of every key is set and can carry the event flag
    let mut exits: Vec<(u64, u32)> = nodes
        .duration
        .iter()
        .zip(&nodes.event)
        .enumerate()
        .map(|(s, (&t, &e))| ((f64_key(t) << 1) | e as u64, s as u32))
        .collect();
    exits.sort_unstable_by_key(|p| p.0);
    let mut entries: Vec<(u64, u32)> = match &nodes.entry {
        Some(en) => en
            .iter()
            .enumerate()
            .map(|(s, &x)| (f64_key(x), s as u32))
            .collect(),
        None => Vec::new(),
    };
    entries.sort_unstable_by_key(|p| p.0);
    let has_entry = nodes.entry.is_some();
    let zero_key = f64_key(0.0);
    let unpack = |k: u64| (k >> 1) | (1u64 << 63);
    let n_events = nodes.event.iter().filter(|&&e| e).count();
    let mut p = PooledHazard {
        times: Vec::with_capacity(n_events),
        at_risk: Vec::with_capacity(n_events),
        events: Vec::with_capacity(n_events),
        hazard: Vec::with_capacity(n_events),
        cumhaz: Vec::with_capacity(n_events),
        survival: Vec::with_capacity(n_events),
    };
    let mut t_idx = vec![0u32; n];
    let mut e_idx = if has_entry { vec![0u32; n] } else { Vec::new() };
    let (mut i, mut l) = (0usize, 0usize);
    let (mut ent_before, mut rem_before) = (0u64, 0u64);
    let (mut lam, mut s) = (0.0f64, 1.0f64);
    loop {
        let tx = exits.get(i).map(|q| unpack(q.0));
        let te = entries.get(l).map(|q| q.0);
        let t = match (tx, te) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (None, None) => break,
        };
        if !has_entry {
            // everybody enters at age 0: e < t  <=>  t > 0
            ent_before = if t > zero_key { n as u64 } else { 0 };
        }
        let i0 = i;
        let mut d = 0u64;
        while i < exits.len() && unpack(exits[i].0) == t {
            d += exits[i].0 & 1;
            i += 1;
        }
        let y = ent_before.saturating_sub(rem_before);
        let kept = d > 0 && y > d;
        if kept {
            let h = d as f64 / y as f64;
            lam += h;
            s *= 1.0 - h;
            p.times.push(key_f64(t));
            p.at_risk.push(y as Count);
            p.events.push(d as Count);
            p.hazard.push(h);
            p.cumhaz.push(lam);
            p.survival.push(s);
        }
        let code = p.times.len() as u32 | if kept { EXACT } else { 0 };
        for &(_, slot) in &exits[i0..i] {
            t_idx[slot as usize] = code;
        }
        rem_before += (i - i0) as u64;
        while l < entries.len() && entries[l].0 == t {
            e_idx[entries[l].1 as usize] = p.times.len() as u32;
            ent_before += 1;
            l += 1;
        }
    }
    let g = nodes.n_nodes();
    let mut node_d = vec![0.0; g];
    let mut node_e = vec![0.0; g];
    drop(exits);
    drop(entries);
    // E_i from the grid positions: Λ0(x) = cumhaz[#kept times <= x - 1]
    let lam_at = |code: u32| match ((code & !EXACT) as usize).checked_sub(1) {
        Some(k) => p.cumhaz[k],
        None => 0.0,
    };
    for (node, w) in nodes.offsets.windows(2).enumerate() {
        let (lo, hi) = (w[0], w[1]);
        node_d[node] = nodes.event[lo..hi].iter().filter(|&&e| e).count() as f64;
        let exit: f64 = t_idx[lo..hi].iter().map(|&c| lam_at(c)).sum();
        let entry: f64 = e_idx
            .get(lo..hi)
            .map_or(0.0, |e| e.iter().map(|&c| lam_at(c)).sum());
        node_e[node] = exit - entry;
    }
    nodes.t_idx = t_idx;
    nodes.e_idx = has_entry.then_some(e_idx);
    (p, node_d, node_e)
}

/// Flag bit of [`NodeSessions::t_idx`]: the exit age is itself a kept pooled event time.
const EXACT: u32 = 1 << 31;

// ------------------------------------------------------------------------------------------
// bins (beta-process grid)
// ------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Bins {
    identity: bool,
    start: Vec<usize>,
    end: Vec<usize>,
    of: Vec<u32>,
    edge: Vec<f64>,
    h: Vec<f64>,
    y: Vec<f64>,
    d: Vec<f64>,
    hsum: Vec<f64>,
    s_minus: Vec<f64>,
}

impl Bins {
    fn new(p: &PooledHazard, max_bins: usize) -> Bins {
        let k = p.times.len();
        let mut b = Bins {
            identity: k <= max_bins,
            start: Vec::new(),
            end: Vec::new(),
            of: Vec::new(),
            edge: Vec::new(),
            h: Vec::new(),
            y: Vec::new(),
            d: Vec::new(),
            hsum: Vec::new(),
            s_minus: Vec::new(),
        };
        if b.identity {
            b.start = (0..k).collect();
            b.end = (0..k).collect();
            b.edge = p.times.clone();
            b.h = p.hazard.clone();
            b.y = p.at_risk.iter().map(|&y| y as f64).collect();
            b.d = p.events.iter().map(|&d| d as f64).collect();
            b.hsum = p.hazard.clone();
        } else {
            let target = p.cumhaz.last().copied().unwrap_or(0.0) / max_bins.max(1) as f64;
            let mut acc = 0.0;
            let mut lo = 0usize;
            let close = |lo: usize, hi: usize, b: &mut Bins| {
                b.start.push(lo);
                b.end.push(hi);
            };
            for i in 0..k {
                let h = p.hazard[i];
                if acc > 0.0 && acc + h > 0.5 {
                    close(lo, i - 1, &mut b);
                    lo = i;
                    acc = 0.0;
                }
                acc += h;
                if acc >= target {
                    close(lo, i, &mut b);
                    lo = i + 1;
                    acc = 0.0;
                }
            }
            if lo < k {
                close(lo, k - 1, &mut b);
            }
            b.of = vec![0; k];
            for j in 0..b.start.len() {
                let (s, e) = (b.start[j], b.end[j]);
                for of in &mut b.of[s..=e] {
                    *of = j as u32;
                }
                let hs: f64 = p.hazard[s..=e].iter().sum();
                let ds: f64 = p.events[s..=e].iter().map(|&d| d as f64).sum();
                b.edge.push(p.times[e]);
                b.hsum.push(hs);
                b.d.push(ds);
                if s == e {
                    b.h.push(p.hazard[s]);
                    b.y.push(p.at_risk[s] as f64);
                } else {
                    b.h.push(hs.min(1.0));
                    b.y.push(ds / hs);
                }
            }
        }
        let mut s = 1.0;
        for &h in &b.h {
            b.s_minus.push(s);
            s *= 1.0 - h;
        }
        b
    }

    fn len(&self) -> usize {
        self.edge.len()
    }

    #[inline]
    fn bin_of(&self, k: usize) -> usize {
        if self.identity {
            k
        } else {
            self.of[k] as usize
        }
    }

    /// Index of the last bin edge ≤ x.
    #[inline]
    fn index_at(&self, x: f64) -> Option<usize> {
        self.edge.partition_point(|&g| g <= x).checked_sub(1)
    }

    /// Node at-risk (Y_ib) and event (d_ib) counts on the bins for the selected sessions.
    fn counts(
        &self,
        p: &PooledHazard,
        node: &NodeSlice<'_>,
        sel: impl Iterator<Item = usize>,
        y: &mut [f64],
        d: &mut [f64],
        diff: &mut Vec<f64>,
    ) {
        let nb = self.len();
        let cum = &p.cumhaz;
        y.fill(0.0);
        d.fill(0.0);
        diff.clear();
        diff.resize(nb + 1, 0.0);
        let cum_before = |k: usize| if k == 0 { 0.0 } else { cum[k - 1] };
        for j in sel {
            let code = node.t_idx[j];
            let kl_plus = (code & !EXACT) as usize;
            if node.events[j] && code & EXACT != 0 {
                d[self.bin_of(kl_plus - 1)] += 1.0;
            }
            let kf = node.e_idx.map_or(0, |e| e[j] as usize);
            if kf >= kl_plus {
                continue;
            }
            let kl = kl_plus - 1;
            if self.identity {
                diff[kf] += 1.0;
                diff[kl + 1] -= 1.0;
                continue;
            }
            let (bf, bl) = (self.bin_of(kf), self.bin_of(kl));
            if bf == bl {
                if kf == self.start[bf] && kl == self.end[bf] {
                    diff[bf] += 1.0;
                    diff[bf + 1] -= 1.0;
                } else {
                    y[bf] += (cum[kl] - cum_before(kf)) / self.hsum[bf];
                }
                continue;
            }
            let mut full_lo = bf;
            let mut full_hi = bl;
            if kf != self.start[bf] {
                y[bf] += (cum[self.end[bf]] - cum_before(kf)) / self.hsum[bf];
                full_lo = bf + 1;
            }
            if kl != self.end[bl] {
                y[bl] += (cum[kl] - cum_before(self.start[bl])) / self.hsum[bl];
                full_hi = bl - 1;
            }
            if full_lo <= full_hi {
                diff[full_lo] += 1.0;
                diff[full_hi + 1] -= 1.0;
            }
        }
        let mut run = 0.0;
        for b in 0..nb {
            run += diff[b];
            y[b] += run;
        }
    }
}

/// Ŝ on the bins: cumprod(1 − (c_b h_b + d_b)/(c_b + max(Y_b, d_b))), c_b = M·S_minus_b,
/// written to `out[..upto]`.
#[inline]
fn beta_curve(
    m: f64,
    h: &[f64],
    s_minus: &[f64],
    y: &[f64],
    d: &[f64],
    out: &mut [f64],
    upto: usize,
) {
    let mut s = 1.0;
    for b in 0..upto {
        let c = m * s_minus[b];
        let yy = y[b].max(d[b]);
        let den = c + yy;
        let hh = if den > 0.0 {
            ((c * h[b] + d[b]) / den).clamp(0.0, 1.0)
        } else {
            h[b]
        };
        s *= 1.0 - hh;
        out[b] = s;
    }
}

// ------------------------------------------------------------------------------------------
// options and reports
// ------------------------------------------------------------------------------------------

/// Which estimator to use for the node curves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Estimator {
    /// Option 1: beta-process prior centred on the pooled hazard.
    BetaProcess,
    /// Option 2: gamma-frailty empirical Bayes.
    GammaFrailty,
}

/// Estimator request: one of the two, or `Auto` (higher cross-validated log-likelihood).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum EstimatorChoice {
    /// Beta process (M by cross-validation unless fixed).
    BetaProcess,
    /// Gamma frailty (no cross-validation needed).
    GammaFrailty,
    /// Pick by cross-validation.
    Auto,
}

/// Within-node K-fold cross-validation settings (defaults reproduce `shrinkage_demo.py`).
#[derive(Debug, Clone, PartialEq)]
pub struct CvOptions {
    /// Number of folds K (default 5). Fold f of a node holds its sessions at positions
    /// f, f+K, f+2K, … of a random permutation.
    pub folds: usize,
    /// Seed of the fold permutations (SplitMix64 / Fisher–Yates), default 0.
    pub seed: u64,
    /// Explicit fold id of every input row (overrides `folds`/`seed`).
    pub fold_ids: Option<Vec<u32>>,
    /// Grid of M values (default 41 log-spaced values from 0.1 to 10⁴).
    pub m_grid: Vec<f64>,
    /// The held-out likelihood is binned at the interior points of `n_quantiles` equally spaced
    /// quantiles (linear interpolation) of the pooled event times (default 16 → 14 edges):
    /// an event in (l, u] scores ln(S(l) − S(u)), a censoring at T scores ln S(T).
    pub n_quantiles: usize,
    /// At most this many nodes (evenly spaced ids) are cross-validated (default 256).
    pub max_nodes: Option<usize>,
}

/// The default M grid: exp(linspace(ln 0.1, ln 10⁴, 41)).
pub fn default_m_grid() -> Vec<f64> {
    let (a, b) = ((0.1f64).ln(), (1e4f64).ln());
    let step = (b - a) / 40.0;
    (0..41)
        .map(|j| {
            if j == 40 {
                b.exp()
            } else {
                (j as f64 * step + a).exp()
            }
        })
        .collect()
}

impl Default for CvOptions {
    fn default() -> Self {
        CvOptions {
            folds: 5,
            seed: 0,
            fold_ids: None,
            m_grid: default_m_grid(),
            n_quantiles: 16,
            max_nodes: Some(256),
        }
    }
}

/// Options of [`ShrinkageModel::fit`].
#[derive(Debug, Clone, PartialEq)]
pub struct ShrinkageOptions {
    /// Estimator request (default `Auto`).
    pub estimator: EstimatorChoice,
    /// Fixed M for the beta process (cross-validation then scores only this M).
    pub m: Option<f64>,
    /// Cross-validation settings.
    pub cv: CvOptions,
    /// Target number of beta-process bins (default 1024; the pooled event times are used
    /// exactly when there are no more than this).
    pub max_bins: usize,
    /// Search interval for θ (default [10⁻⁴, 10²], searched on ln θ).
    pub theta_bounds: (f64, f64),
    /// Number of nodes (default max node id + 1); nodes without sessions get the prior curve.
    pub n_nodes: Option<usize>,
}

impl Default for ShrinkageOptions {
    fn default() -> Self {
        ShrinkageOptions {
            estimator: EstimatorChoice::Auto,
            m: None,
            cv: CvOptions::default(),
            max_bins: 1024,
            theta_bounds: (1e-4, 1e2),
            n_nodes: None,
        }
    }
}

/// Cross-validated held-out log-likelihoods (higher is better).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CvReport {
    /// M values scored.
    pub m_grid: Vec<f64>,
    /// Summed held-out log-likelihood of the beta process for each M.
    pub beta_loglik: Vec<f64>,
    /// Summed held-out log-likelihood of the gamma frailty (θ̂ from all data, as the reference).
    pub frailty_loglik: f64,
    /// argmax_M of `beta_loglik` (first maximum).
    pub best_m: f64,
    /// max of `beta_loglik`.
    pub best_beta_loglik: f64,
    /// Number of nodes cross-validated.
    pub nodes_used: usize,
    /// Number of held-out sessions scored.
    pub sessions_scored: usize,
}

/// Serializable summary of a fitted [`ShrinkageModel`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShrinkageSummary {
    /// Estimator used by [`ShrinkageModel::node_curve`].
    pub selected: Estimator,
    /// Beta-process M (if known).
    pub m: Option<f64>,
    /// Gamma-frailty variance θ̂.
    pub theta: f64,
    /// Cross-validation results (if run).
    pub cv: Option<CvReport>,
    /// Number of nodes.
    pub n_nodes: usize,
    /// Number of sessions.
    pub n_sessions: usize,
    /// Number of pooled event times used.
    pub n_pooled_times: usize,
    /// Number of beta-process bins.
    pub n_bins: usize,
}

// ------------------------------------------------------------------------------------------
// the model
// ------------------------------------------------------------------------------------------

/// Fitted shrinkage model: pooled hazard, beta-process grid, θ̂, per-node (D_i, E_i), M and
/// the cross-validation report; produces per-node [`NodeCurve`]s.
#[derive(Debug, Clone)]
pub struct ShrinkageModel {
    nodes: NodeSessions,
    pooled: PooledHazard,
    bins: Bins,
    theta: f64,
    node_d: Vec<f64>,
    node_e: Vec<f64>,
    m: Option<f64>,
    cv: Option<CvReport>,
    selected: Estimator,
}

impl ShrinkageModel {
    /// Fits the model to sessions `data` of nodes `groups` (see the module docs).
    pub fn fit(
        groups: &[u32],
        data: &SurvivalData<'_>,
        opts: &ShrinkageOptions,
    ) -> Result<ShrinkageModel, SurvivalError> {
        if opts.max_bins == 0 {
            return Err(SurvivalError::InvalidArgument(
                "max_bins must be >= 1".into(),
            ));
        }
        if let Some(m) = opts.m {
            if !(m > 0.0 && m.is_finite()) {
                return Err(SurvivalError::InvalidArgument(format!(
                    "M must be positive, got {m}"
                )));
            }
        }
        let (tlo, thi) = opts.theta_bounds;
        if !(tlo > 0.0 && thi > tlo && thi.is_finite()) {
            return Err(SurvivalError::InvalidArgument("bad theta_bounds".into()));
        }
        let g = check_input(groups, data, opts.n_nodes)?;
        let mut nodes = NodeSessions::build(groups, data, g);
        let (pooled, node_d, node_e) = pooled_sweep(&mut nodes);
        if pooled.times.is_empty() {
            return Err(SurvivalError::NoEvents("shrinkage needs pooled events"));
        }
        let bins = Bins::new(&pooled, opts.max_bins);
        let theta = fit_theta(&node_d, &node_e, opts.theta_bounds);

        let mut model = ShrinkageModel {
            nodes,
            pooled,
            bins,
            theta,
            node_d,
            node_e,
            m: opts.m,
            cv: None,
            selected: Estimator::GammaFrailty,
        };
        let need_cv = match opts.estimator {
            EstimatorChoice::Auto => true,
            EstimatorChoice::BetaProcess => opts.m.is_none(),
            EstimatorChoice::GammaFrailty => false,
        };
        if need_cv {
            let grid = match opts.m {
                Some(m) => vec![m],
                None => opts.cv.m_grid.clone(),
            };
            let folds_csr = match &opts.cv.fold_ids {
                Some(ids) if ids.len() == data.len() => Some(model.nodes.permute(groups, ids)),
                Some(ids) => {
                    return Err(SurvivalError::LengthMismatch {
                        what: "fold_ids",
                        expected: data.len(),
                        got: ids.len(),
                    })
                }
                None => None,
            };
            let rep = model.cross_validate(&opts.cv, folds_csr.as_deref(), &grid)?;
            model.m = Some(rep.best_m);
            model.cv = Some(rep);
        }
        model.selected = match opts.estimator {
            EstimatorChoice::BetaProcess => Estimator::BetaProcess,
            EstimatorChoice::GammaFrailty => Estimator::GammaFrailty,
            EstimatorChoice::Auto => match &model.cv {
                Some(r) if r.best_beta_loglik > r.frailty_loglik => Estimator::BetaProcess,
                _ => Estimator::GammaFrailty,
            },
        };
        Ok(model)
    }

    /// Estimator used by [`ShrinkageModel::node_curve`].
    pub fn selected(&self) -> Estimator {
        self.selected
    }

    /// Gamma-frailty variance θ̂.
    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// Beta-process M (chosen by cross-validation or fixed); `None` for a frailty-only fit.
    pub fn m(&self) -> Option<f64> {
        self.m
    }

    /// Cross-validation report, if cross-validation ran.
    pub fn cv(&self) -> Option<&CvReport> {
        self.cv.as_ref()
    }

    /// Pooled hazard.
    pub fn pooled(&self) -> &PooledHazard {
        &self.pooled
    }

    /// Grouped sessions.
    pub fn sessions(&self) -> &NodeSessions {
        &self.nodes
    }

    /// Number of nodes.
    pub fn n_nodes(&self) -> usize {
        self.nodes.n_nodes()
    }

    /// (D_i, E_i): events and expected events Σ_j [Λ0(T_ij) − Λ0(e_ij)] of node i.
    pub fn node_events_exposure(&self, node: usize) -> Option<(f64, f64)> {
        Some((*self.node_d.get(node)?, *self.node_e.get(node)?))
    }

    /// Posterior mean frailty E[Z_i | data] = (1/θ + D_i)/(1/θ + E_i) (1 for unknown nodes).
    pub fn posterior_frailty(&self, node: usize) -> f64 {
        let c = self.frailty_curve(node);
        c.shape / c.rate
    }

    /// Marginal log-likelihood of θ (up to a constant), see the module docs.
    pub fn frailty_marginal_loglik(&self, theta: f64) -> f64 {
        frailty_loglik(
            1.0 / theta,
            &distinct_counts(&self.node_d),
            &self.node_d,
            &self.node_e,
        )
    }

    /// Curve of `node` under the selected estimator.
    pub fn node_curve(&self, node: usize) -> NodeCurve<'_> {
        match (self.selected, self.m) {
            (Estimator::BetaProcess, Some(m)) => NodeCurve::Beta(self.beta_curve_with(node, m)),
            _ => NodeCurve::Frailty(self.frailty_curve(node)),
        }
    }

    /// Beta-process curve of `node` with the model's M (`None` if M is unknown).
    pub fn beta_curve(&self, node: usize) -> Option<BetaNodeCurve<'_>> {
        self.m.map(|m| self.beta_curve_with(node, m))
    }

    /// Beta-process curve of `node` for a given M > 0 (O(bins + sessions of the node)).
    /// A node without sessions (or an unknown id) gets the pooled curve.
    pub fn beta_curve_with(&self, node: usize, m: f64) -> BetaNodeCurve<'_> {
        let nb = self.bins.len();
        let mut y = vec![0.0; nb];
        let mut d = vec![0.0; nb];
        let mut diff = Vec::new();
        let ns = self.nodes.node(node);
        self.bins.counts(
            &self.pooled,
            &ns,
            0..ns.durations.len(),
            &mut y,
            &mut d,
            &mut diff,
        );
        let mut s = vec![0.0; nb];
        beta_curve(
            m.max(0.0),
            &self.bins.h,
            &self.bins.s_minus,
            &y,
            &d,
            &mut s,
            nb,
        );
        BetaNodeCurve {
            times: &self.bins.edge,
            survival: s,
            m,
        }
    }

    /// Gamma-frailty predictive curve of `node` (prior predictive for unknown nodes).
    pub fn frailty_curve(&self, node: usize) -> FrailtyNodeCurve<'_> {
        let k = 1.0 / self.theta;
        let (d, e) = self.node_events_exposure(node).unwrap_or((0.0, 0.0));
        FrailtyNodeCurve {
            times: &self.pooled.times,
            cumhaz: &self.pooled.cumhaz,
            shape: k + d,
            rate: k + e,
        }
    }

    /// Serializable summary.
    pub fn summary(&self) -> ShrinkageSummary {
        ShrinkageSummary {
            selected: self.selected,
            m: self.m,
            theta: self.theta,
            cv: self.cv.clone(),
            n_nodes: self.nodes.n_nodes(),
            n_sessions: self.nodes.n_sessions(),
            n_pooled_times: self.pooled.times.len(),
            n_bins: self.bins.len(),
        }
    }

    /// Within-node K-fold cross-validation of the beta process over `m_grid` and of the frailty
    /// model (θ̂ fixed), as in `shrinkage_demo.py`.
    /// `folds_csr`: explicit fold ids in CSR (node-grouped) order.
    fn cross_validate(
        &self,
        opts: &CvOptions,
        folds_csr: Option<&[u32]>,
        m_grid: &[f64],
    ) -> Result<CvReport, SurvivalError> {
        if m_grid.is_empty() || m_grid.iter().any(|&m| m.is_nan() || m <= 0.0) {
            return Err(SurvivalError::InvalidArgument(
                "M grid must be non-empty and positive".into(),
            ));
        }
        if folds_csr.is_none() && opts.folds < 2 {
            return Err(SurvivalError::InvalidArgument(
                "need at least 2 folds".into(),
            ));
        }
        if opts.n_quantiles < 3 {
            return Err(SurvivalError::InvalidArgument(
                "n_quantiles must be >= 3".into(),
            ));
        }
        let k_fr = 1.0 / self.theta;
        let bins = &self.bins;
        let nb = bins.len();
        let edges = quantile_edges(&self.pooled.times, opts.n_quantiles);

        // nodes to use
        let g = self.nodes.n_nodes();
        let use_nodes: Vec<usize> = match opts.max_nodes {
            Some(cap) if cap < g => (0..cap).map(|j| j * g / cap).collect(),
            _ => (0..g).collect(),
        };

        let mut rng = SplitMix64::new(opts.seed);
        let mut cv = vec![0.0; m_grid.len()];
        let mut cv_fr = 0.0;
        let mut scored = 0usize;
        let (mut yh, mut dh, mut yt, mut dt) =
            (vec![0.0; nb], vec![0.0; nb], vec![0.0; nb], vec![0.0; nb]);
        let (mut hp, mut spm, mut lp, mut curve, mut curve2) = (
            vec![0.0; nb],
            vec![0.0; nb],
            vec![0.0; nb],
            vec![0.0; nb],
            vec![0.0; nb],
        );
        let mut diff = Vec::new();
        let mut fold: Vec<u32> = Vec::new();
        let mut perm: Vec<usize> = Vec::new();
        let mut specs: Vec<(Eval, Eval)> = Vec::new();
        for &i in &use_nodes {
            let ns = self.nodes.node(i);
            let n = ns.durations.len();
            if n == 0 {
                continue;
            }
            let base = self.nodes.offsets[i];
            fold.clear();
            let n_folds = match folds_csr {
                Some(ids) => {
                    fold.extend_from_slice(&ids[base..base + n]);
                    fold.iter().map(|&f| f as usize + 1).max().unwrap_or(0)
                }
                None => {
                    perm.clear();
                    perm.extend(0..n);
                    for q in (1..n).rev() {
                        let r = rng.below_or_eq(q);
                        perm.swap(q, r);
                    }
                    fold.resize(n, 0);
                    for (q, &j) in perm.iter().enumerate() {
                        fold[j] = (q % opts.folds) as u32;
                    }
                    opts.folds
                }
            };
            for f in 0..n_folds as u32 {
                if !fold.contains(&f) {
                    continue;
                }
                let held = (0..n).filter(|&j| fold[j] == f);
                let train = (0..n).filter(|&j| fold[j] != f);
                bins.counts(&self.pooled, &ns, held.clone(), &mut yh, &mut dh, &mut diff);
                bins.counts(
                    &self.pooled,
                    &ns,
                    train.clone(),
                    &mut yt,
                    &mut dt,
                    &mut diff,
                );
                // pooled minus held-out
                let (mut s, mut lam) = (1.0, 0.0);
                for b in 0..nb {
                    let yp = bins.y[b] - yh[b];
                    let dp = bins.d[b] - dh[b];
                    let h = if yp > 1e-9 {
                        (dp / yp).clamp(0.0, 1.0)
                    } else {
                        0.0
                    };
                    hp[b] = h;
                    spm[b] = s;
                    s *= 1.0 - h;
                    lam += h;
                    lp[b] = lam;
                }
                let lk = |x: f64| bins.index_at(x).map_or(0.0, |b| lp[b]);
                let (mut et, mut dtot) = (0.0, 0.0);
                for j in train {
                    et += lk(ns.durations[j]) - lk(ns.entry_at(j));
                    dtot += ns.events[j] as u8 as f64;
                }
                for b in 0..nb {
                    curve2[b] = ((k_fr + et) / (k_fr + et + lp[b])).powf(k_fr + dtot);
                }
                // evaluation points of the held-out sessions
                specs.clear();
                let mut upto = 0usize;
                for j in held {
                    let t = ns.durations[j];
                    let spec = if ns.events[j] {
                        let b = edges.partition_point(|&e| e < t);
                        let lo = if b > 0 {
                            Eval::at(bins.index_at(edges[b - 1]))
                        } else {
                            Eval::Const(1.0)
                        };
                        let hi = if b < edges.len() {
                            Eval::at(bins.index_at(edges[b]))
                        } else {
                            Eval::Const(0.0)
                        };
                        (lo, hi)
                    } else {
                        (Eval::at(bins.index_at(t)), Eval::None)
                    };
                    for e in [spec.0, spec.1] {
                        if let Eval::Idx(k) = e {
                            upto = upto.max(k + 1);
                        }
                    }
                    specs.push(spec);
                }
                scored += specs.len();
                cv_fr += score(&specs, &curve2);
                for (jm, &m) in m_grid.iter().enumerate() {
                    beta_curve(m, &hp, &spm, &yt, &dt, &mut curve, upto);
                    cv[jm] += score(&specs, &curve);
                }
            }
        }
        let mut best = 0usize;
        for j in 1..cv.len() {
            if cv[j] > cv[best] {
                best = j;
            }
        }
        Ok(CvReport {
            m_grid: m_grid.to_vec(),
            best_m: m_grid[best],
            best_beta_loglik: cv[best],
            beta_loglik: cv,
            frailty_loglik: cv_fr,
            nodes_used: use_nodes.len(),
            sessions_scored: scored,
        })
    }
}

/// How a held-out session's likelihood term reads the curve.
#[derive(Debug, Clone, Copy)]
enum Eval {
    Const(f64),
    Idx(usize),
    None,
}

impl Eval {
    fn at(idx: Option<usize>) -> Eval {
        match idx {
            Some(k) => Eval::Idx(k),
            None => Eval::Const(1.0),
        }
    }

    #[inline]
    fn value(self, curve: &[f64]) -> f64 {
        match self {
            Eval::Const(c) => c,
            Eval::Idx(k) => curve[k],
            Eval::None => 0.0,
        }
    }
}

/// Σ held-out log-likelihood: event ln max(S(l) − S(u), 1e−300); censored ln max(S(T), 1e−300).
fn score(specs: &[(Eval, Eval)], curve: &[f64]) -> f64 {
    specs
        .iter()
        .map(|&(a, b)| match b {
            Eval::None => a.value(curve).max(1e-300).ln(),
            _ => (a.value(curve) - b.value(curve)).max(1e-300).ln(),
        })
        .sum()
}

/// Interior points of `nq` equally spaced quantiles (numpy `quantile`, linear method).
fn quantile_edges(x: &[f64], nq: usize) -> Vec<f64> {
    let n = x.len();
    if n == 0 {
        return Vec::new();
    }
    let step = 1.0 / (nq - 1) as f64;
    (1..nq - 1)
        .map(|j| {
            let q = j as f64 * step;
            // numpy: n*q + (alpha + q*(1 - alpha - beta)) - 1 with alpha = beta = 1
            let vi = n as f64 * q + (1.0 - q) - 1.0;
            let lo = (vi.floor().max(0.0) as usize).min(n - 1);
            let hi = (lo + 1).min(n - 1);
            let g = vi - lo as f64;
            let (a, b) = (x[lo], x[hi]);
            let diff = b - a;
            if g >= 0.5 {
                b - diff * (1.0 - g)
            } else {
                a + diff * g
            }
        })
        .collect()
}

/// Distinct D values with multiplicities, ascending.
fn distinct_counts(d: &[f64]) -> Vec<(u64, f64)> {
    let mut v: Vec<u64> = d.iter().map(|&x| x as u64).collect();
    v.sort_unstable();
    let mut out: Vec<(u64, f64)> = Vec::new();
    for x in v {
        match out.last_mut() {
            Some((y, c)) if *y == x => *c += 1.0,
            _ => out.push((x, 1.0)),
        }
    }
    out
}

/// Σ_i [ln Γ(k + D_i) − ln Γ(k) + k ln k − (k + D_i) ln(k + E_i)], k = 1/θ, using
/// ln Γ(k + D) − ln Γ(k) = Σ_{j<D} ln(k + j) accumulated over the distinct D values.
fn frailty_loglik(k: f64, distinct: &[(u64, f64)], d: &[f64], e: &[f64]) -> f64 {
    let mut acc = 0.0;
    let mut j = 0u64;
    let mut tot = 0.0;
    for &(dv, cnt) in distinct {
        while j < dv {
            acc += (k + j as f64).ln();
            j += 1;
        }
        tot += cnt * acc;
    }
    let kl = k * k.ln();
    for (&di, &ei) in d.iter().zip(e) {
        tot += kl - (k + di) * (k + ei).ln();
    }
    tot
}

/// θ̂ = argmax of the marginal likelihood over ln θ ∈ [ln lo, ln hi] (Brent, x tolerance 10⁻⁵).
fn fit_theta(d: &[f64], e: &[f64], (lo, hi): (f64, f64)) -> f64 {
    let distinct = distinct_counts(d);
    let (x, _) = minimize_bounded(
        |x| -frailty_loglik((-x).exp(), &distinct, d, e),
        lo.ln(),
        hi.ln(),
        1e-5,
        500,
    );
    x.exp()
}

// ------------------------------------------------------------------------------------------
// node curves
// ------------------------------------------------------------------------------------------

/// Beta-process node curve Ŝ_i on the bin grid (right-continuous steps at the bin edges,
/// flat after the last pooled event time). Always > 0, so S(a+t)/S(a) is defined for every a.
#[derive(Debug, Clone, Serialize)]
pub struct BetaNodeCurve<'a> {
    /// Step times (bin right edges = pooled event times when unbinned).
    pub times: &'a [f64],
    /// Ŝ_i at each step time.
    pub survival: Vec<f64>,
    /// Prior strength M (virtual sessions).
    pub m: f64,
}

impl ConditionalSurvival for BetaNodeCurve<'_> {
    /// Ŝ_i(t); 1 before the first step.
    #[inline]
    fn survival(&self, t: f64) -> f64 {
        match self.times.partition_point(|&x| x <= t).checked_sub(1) {
            Some(k) => self.survival[k],
            None => 1.0,
        }
    }

    /// 0: flat after the last pooled event time.
    fn tail_hazard(&self) -> f64 {
        0.0
    }
}

/// Gamma-frailty predictive node curve S̃_i(t) = (β/(β + Λ0(t)))^α with α = 1/θ + D_i,
/// β = 1/θ + E_i (posterior Z_i ~ Gamma(α, β)).
#[derive(Debug, Clone, Serialize)]
pub struct FrailtyNodeCurve<'a> {
    #[serde(skip)]
    times: &'a [f64],
    #[serde(skip)]
    cumhaz: &'a [f64],
    /// Posterior shape α = 1/θ + D_i.
    pub shape: f64,
    /// Posterior rate β = 1/θ + E_i.
    pub rate: f64,
}

impl FrailtyNodeCurve<'_> {
    #[inline]
    fn lam(&self, t: f64) -> f64 {
        match self.times.partition_point(|&x| x <= t).checked_sub(1) {
            Some(k) => self.cumhaz[k],
            None => 0.0,
        }
    }

    /// Conditional survival of a live session whose age-a exposure is already part of the
    /// fitted data (censored at a): S̃_i(a+t | a) = (β / (β + Λ0(a+t) − Λ0(a)))^α.
    /// (The trait's `conditional`, S̃_i(a+t)/S̃_i(a), is the same formula with the session
    /// not yet in the data.)
    pub fn conditional_live(&self, a: f64, t: f64) -> f64 {
        let dl = self.lam(a + t) - self.lam(a);
        (-self.shape * (dl / self.rate).ln_1p()).exp()
    }
}

impl ConditionalSurvival for FrailtyNodeCurve<'_> {
    /// S̃_i(t) = exp(−α ln(1 + Λ0(t)/β)).
    #[inline]
    fn survival(&self, t: f64) -> f64 {
        (-self.shape * (self.lam(t) / self.rate).ln_1p()).exp()
    }

    /// 0: Λ0 is flat after the last pooled event time.
    fn tail_hazard(&self) -> f64 {
        0.0
    }

    /// S̃_i(a+t)/S̃_i(a) = exp(−α [ln(1 + Λ0(a+t)/β) − ln(1 + Λ0(a)/β)]), computed without the
    /// ratio so it stays defined where S̃_i(a) underflows (1 for t ≤ 0, a negative age is 0).
    fn conditional(&self, a: f64, t: f64) -> f64 {
        if t.is_nan() || t <= 0.0 {
            return 1.0;
        }
        let a = if a > 0.0 { a } else { 0.0 };
        let la = (self.lam(a) / self.rate).ln_1p();
        let lb = (self.lam(a + t) / self.rate).ln_1p();
        (-self.shape * (lb - la)).exp().clamp(0.0, 1.0)
    }

    /// Always defined: S̃_i(a) > 0 at every age (the predictive curve never reaches 0).
    fn conditional_checked(&self, a: f64, t: f64) -> Option<f64> {
        Some(self.conditional(a, t))
    }

    /// [`ConditionalSurvival::conditional`] on the grid, Λ0(a) looked up once.
    fn conditional_grid(&self, a: f64, step: f64, out: &mut [f64; GRID_POINTS]) {
        let a = if a > 0.0 { a } else { 0.0 };
        let step = if step > 0.0 { step } else { 0.0 };
        let la = (self.lam(a) / self.rate).ln_1p();
        out[0] = 1.0;
        for (k, o) in out.iter_mut().enumerate().skip(1) {
            let t = k as f64 * step;
            *o = if t > 0.0 {
                let lb = (self.lam(a + t) / self.rate).ln_1p();
                (-self.shape * (lb - la)).exp().clamp(0.0, 1.0)
            } else {
                1.0
            };
        }
    }
}

/// A shrunk node curve of either kind.
#[derive(Debug, Clone, Serialize)]
pub enum NodeCurve<'a> {
    /// Beta-process curve.
    Beta(BetaNodeCurve<'a>),
    /// Gamma-frailty predictive curve.
    Frailty(FrailtyNodeCurve<'a>),
}

impl ConditionalSurvival for NodeCurve<'_> {
    fn survival(&self, t: f64) -> f64 {
        match self {
            NodeCurve::Beta(c) => c.survival(t),
            NodeCurve::Frailty(c) => c.survival(t),
        }
    }

    fn tail_hazard(&self) -> f64 {
        match self {
            NodeCurve::Beta(c) => c.tail_hazard(),
            NodeCurve::Frailty(c) => c.tail_hazard(),
        }
    }

    fn conditional(&self, a: f64, t: f64) -> f64 {
        match self {
            NodeCurve::Beta(c) => c.conditional(a, t),
            NodeCurve::Frailty(c) => c.conditional(a, t),
        }
    }

    fn conditional_checked(&self, a: f64, t: f64) -> Option<f64> {
        match self {
            NodeCurve::Beta(c) => c.conditional_checked(a, t),
            NodeCurve::Frailty(c) => c.conditional_checked(a, t),
        }
    }

    fn conditional_grid(&self, a: f64, step: f64, out: &mut [f64; GRID_POINTS]) {
        match self {
            NodeCurve::Beta(c) => c.conditional_grid(a, step, out),
            NodeCurve::Frailty(c) => c.conditional_grid(a, step, out),
        }
    }
}

#[cfg(test)]
#[path = "shrinkage_tests.rs"]
mod tests;
