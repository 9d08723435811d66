//! Kaplan–Meier (product-limit) estimator with right censoring, left truncation, ties and
//! integer weights, following lifelines 0.30.3 `KaplanMeierFitter` conventions exactly
//! (see `shared/survival-golden/README.md`):
//!
//! * **timeline** = unique(durations ∪ entry); without entry times every subject enters at the
//!   origin min(0, min durations), which is therefore the first row (S = 1 there).
//!   Ties are grouped by exact float equality (-0.0 == 0.0).
//! * **risk set** n(t) = #{entry < t ≤ T}: a subject censored at t is at risk for events at t,
//!   a subject entering at t is not — except on the first row, where the entrants count.
//! * **estimate** S(t) = exp(Σ_{t_k ≤ t} [ln(n_k − d_k) − ln n_k]); rows with n = 0 carry S forward.
//! * **Greenwood** V(t) = Σ_{t_k ≤ t} d_k / (n_k (n_k − d_k)), the n = d term set to 0.
//! * **95 % CI** log(−log) ("exponential Greenwood"): S^exp(±z √V / ln S), S = 1 → [1, 1], S = 0 → [0, 0].
//! * **median** = first timeline time with S ≤ 0.5 + 10⁻¹² (`None` if not reached).
//!
//! Layout and cost: a fit stores time, n, d, S per distinct time (24 bytes; counts are
//! [`Count`] = u32) plus the entrant counts when entry times were given; Greenwood sums,
//! confidence intervals, censoring and entrant counts are derived on demand (O(rows)).
//! Right-censored data (the common case) take a fast path: each exit is packed into one u64
//! `(order-preserving f64 key << 1) | event`, sorted with `sort_unstable`, and scanned once;
//! the time column is written in place into the sort buffer, so the peak extra memory is
//! 24 bytes per input row. Left-truncated or weighted data sort event, censoring and entry keys
//! separately and merge them. No per-row allocation in either case. [`GroupedKm`] fits one
//! curve per group (node) from one counting sort by group followed by small per-group sorts.
//!
//! Size: over 800 lines because the Kaplan-Meier estimator with lifelines' conventions, its
//! variance, views and the grouped fast path are one estimator; the fast path must stay next to
//! the reference path it is checked against. Unit tests live in `km_tests.rs`.

use serde::Serialize;

use crate::survival::{ConditionalSurvival, SurvivalData, SurvivalError, Z_95};

/// Tolerance used by threshold queries (median, quantiles, median residual life):
/// S ≤ q + 10⁻¹² counts as reaching q, so exact-arithmetic ties (S exactly 0.5) are not lost
/// to floating-point noise.
pub const THRESHOLD_TOL: f64 = 1e-12;

/// Count type of the event table (subjects at risk, events, censorings, entrants). Total
/// (weighted) sample size is limited to `u32::MAX`, which keeps a table row at 24 bytes.
pub type Count = u32;

// ------------------------------------------------------------------------------------------
// sort keys
// ------------------------------------------------------------------------------------------

/// Order-preserving map f64 → u64 (finite input; -0.0 is mapped like +0.0).
#[inline]
pub(crate) fn f64_key(x: f64) -> u64 {
    let b = (x + 0.0).to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | (1 << 63)
    }
}

/// The timeline length from which the confidence interval is computed on every core.
const PARALLEL_ROWS: usize = 1 << 16;

/// Inverse of [`f64_key`].
#[inline]
pub(crate) fn key_f64(k: u64) -> f64 {
    if k >> 63 == 1 {
        f64::from_bits(k & !(1 << 63))
    } else {
        f64::from_bits(!k)
    }
}

/// Key of the sentinel that terminates every sorted run list (no finite f64 maps to it).
pub(crate) const SENTINEL: u64 = u64::MAX;

/// A sorted run element: a key and its weight.
pub(crate) trait KeyW: Copy {
    /// The terminating element (key [`SENTINEL`], weight 0).
    const END: Self;
    fn key(self) -> u64;
    fn w(self) -> u64;
}

impl KeyW for u64 {
    const END: Self = SENTINEL;
    #[inline(always)]
    fn key(self) -> u64 {
        self
    }
    #[inline(always)]
    fn w(self) -> u64 {
        1
    }
}

impl KeyW for (u64, u64) {
    const END: Self = (SENTINEL, 0);
    #[inline(always)]
    fn key(self) -> u64 {
        self.0
    }
    #[inline(always)]
    fn w(self) -> u64 {
        self.1
    }
}

/// One event-table row before the estimate: (time key, n at risk, d, c, entered).
#[derive(Clone, Copy)]
struct RawRow {
    key: u64,
    n: u64,
    d: u64,
    e: u64,
}

/// Merges sorted event keys, censoring keys and entry keys (each list terminated by
/// `KeyW::END`) into event-table rows: n(t_i) = #{entry < t_i} − #{T < t_i}
/// (+ entrants at t_i on the first row).
#[inline(always)]
fn merge_rows<E: KeyW, C: KeyW, N: KeyW>(
    ev: &[E],
    ce: &[C],
    en: &[N],
    mut emit: impl FnMut(RawRow),
) {
    debug_assert!(ev.last().map(|x| x.key()) == Some(SENTINEL));
    debug_assert!(ce.last().map(|x| x.key()) == Some(SENTINEL));
    debug_assert!(en.last().map(|x| x.key()) == Some(SENTINEL));
    let (mut i, mut j, mut l) = (0usize, 0usize, 0usize);
    let (mut ent_before, mut rem_before) = (0u64, 0u64);
    let mut first = true;
    loop {
        let t = ev[i].key().min(ce[j].key()).min(en[l].key());
        if t == SENTINEL {
            break;
        }
        let mut d = 0u64;
        while ev[i].key() == t {
            d += ev[i].w();
            i += 1;
        }
        let mut c = 0u64;
        while ce[j].key() == t {
            c += ce[j].w();
            j += 1;
        }
        let mut e = 0u64;
        while en[l].key() == t {
            e += en[l].w();
            l += 1;
        }
        let n = (ent_before + if first { e } else { 0 }).saturating_sub(rem_before);
        emit(RawRow { key: t, n, d, e });
        first = false;
        ent_before += e;
        rem_before += d + c;
    }
}

/// Column storage of one or many event tables.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct Columns {
    time: Vec<f64>,
    n_at_risk: Vec<Count>,
    n_event: Vec<Count>,
    survival: Vec<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    n_entered: Option<Vec<Count>>,
}

impl Columns {
    fn new(with_entered: bool) -> Self {
        Columns {
            n_entered: if with_entered { Some(Vec::new()) } else { None },
            ..Default::default()
        }
    }

    fn reserve_exact(&mut self, rows: usize) {
        self.time.reserve_exact(rows);
        self.n_at_risk.reserve_exact(rows);
        self.n_event.reserve_exact(rows);
        self.survival.reserve_exact(rows);
        if let Some(e) = &mut self.n_entered {
            e.reserve_exact(rows);
        }
    }

    fn len(&self) -> usize {
        self.time.len()
    }

    fn shrink_to_fit(&mut self) {
        self.time.shrink_to_fit();
        self.n_at_risk.shrink_to_fit();
        self.n_event.shrink_to_fit();
        self.survival.shrink_to_fit();
        if let Some(e) = &mut self.n_entered {
            e.shrink_to_fit();
        }
    }

    fn view(&self, lo: usize, hi: usize) -> KmView<'_> {
        KmView {
            time: &self.time[lo..hi],
            n_at_risk: &self.n_at_risk[lo..hi],
            n_event: &self.n_event[lo..hi],
            survival: &self.survival[lo..hi],
            n_entered: self.n_entered.as_ref().map(|e| &e[lo..hi]),
        }
    }
}

fn count_rows<E: KeyW, C: KeyW, N: KeyW>(ev: &[E], ce: &[C], en: &[N]) -> usize {
    let mut rows = 0usize;
    merge_rows(ev, ce, en, |_| rows += 1);
    rows
}

/// Right-censored fast path shared by [`KmFit`] and [`GroupedKm`]: every exit is packed as
/// `(key << 1) | event` (valid when all durations have the same sign, so the dropped top key
/// bit is a constant), placed by a counting sort into its group's segment behind one free
/// slot, sorted per segment, and scanned linearly. The time column is written in place into
/// the same buffer (row r never overtakes read position i), so the only allocations are the
/// 8-byte key per row and the 16 bytes per row of the other columns.
/// Returns `None` (nothing allocated that survives) when the durations have mixed signs.
fn fit_packed(
    groups: Option<&[u32]>,
    durations: &[f64],
    events: &[bool],
    g_count: usize,
) -> Option<(Columns, Vec<usize>)> {
    let top = f64_key(*durations.first()?) & (1 << 63);
    if durations.iter().any(|&t| f64_key(t) & (1 << 63) != top) {
        return None;
    }
    // segment g = [off[g], off[g + 1]): one free slot, then the group's exits
    let off: Vec<usize> = match groups {
        Some(g) => bucket_offsets(g, g_count, |_| true, 1),
        None => vec![0, durations.len() + 1],
    };
    let mut buf = vec![0u64; off[g_count]];
    match groups {
        Some(g) => {
            let mut pos: Vec<usize> = off[..g_count].iter().map(|&o| o + 1).collect();
            for ((&gi, &t), &e) in g.iter().zip(durations).zip(events) {
                let p = &mut pos[gi as usize];
                buf[*p] = (f64_key(t) << 1) | e as u64;
                *p += 1;
            }
        }
        None => {
            for ((b, &t), &e) in buf[1..].iter_mut().zip(durations).zip(events) {
                *b = (f64_key(t) << 1) | e as u64;
            }
        }
    }
    let rows_max = durations.len() + g_count;
    let mut n_at_risk: Vec<Count> = Vec::with_capacity(rows_max);
    let mut n_event: Vec<Count> = Vec::with_capacity(rows_max);
    let mut survival: Vec<f64> = Vec::with_capacity(rows_max);
    let mut offsets = Vec::with_capacity(g_count + 1);
    offsets.push(0);
    let unpack = |k: u64| (k >> 1) | top;
    let zero = f64_key(0.0);
    let mut r = 0usize; // write position of the time column (r <= read position)
    for g in 0..g_count {
        let (lo, hi) = (off[g] + 1, off[g + 1]);
        buf[lo..hi].sort_unstable();
        if lo < hi {
            let total = (hi - lo) as u64;
            let k0 = unpack(buf[lo] >> 1 << 1);
            let origin = k0.min(zero);
            if origin != k0 {
                buf[r] = key_f64(origin).to_bits();
                r += 1;
                n_at_risk.push(total as Count);
                n_event.push(0);
                survival.push(1.0);
            }
            let mut logsum = 0.0f64;
            let mut s = 1.0f64;
            let mut cache_n = u64::MAX;
            let mut cache_ln = 0.0f64;
            let mut removed = 0u64;
            let mut i = lo;
            while i < hi {
                let t = buf[i] >> 1;
                let mut d = buf[i] & 1;
                let mut j = i + 1;
                while j < hi && buf[j] >> 1 == t {
                    d += buf[j] & 1;
                    j += 1;
                }
                let n = total - removed;
                if d > 0 {
                    if d == n {
                        logsum = f64::NEG_INFINITY;
                    } else {
                        let ln_n = if cache_n == n {
                            cache_ln
                        } else {
                            (n as f64).ln()
                        };
                        let m = n - d;
                        let ln_m = (m as f64).ln();
                        logsum += ln_m - ln_n;
                        cache_n = m;
                        cache_ln = ln_m;
                    }
                    s = logsum.exp();
                }
                buf[r] = key_f64(unpack(t << 1)).to_bits();
                r += 1;
                n_at_risk.push(n as Count);
                n_event.push(d as Count);
                survival.push(s);
                removed += (j - i) as u64;
                i = j;
            }
        }
        offsets.push(r);
    }
    buf.truncate(r);
    let time: Vec<f64> = buf.into_iter().map(f64::from_bits).collect();
    let mut cols = Columns {
        time,
        n_at_risk,
        n_event,
        survival,
        n_entered: None,
    };
    if cols.time.capacity() > cols.len() + cols.len() / 8 + 16 {
        cols.shrink_to_fit();
    }
    Some((cols, offsets))
}

/// Appends the event table and the product-limit estimate of one curve to `cols`.
/// S = exp(cumsum(ln(n − d) − ln n)) exactly as lifelines (a d > n row — only possible when
/// entry == duration for an event — is treated as d = n).
fn append_table<E: KeyW, C: KeyW, N: KeyW>(ev: &[E], ce: &[C], en: &[N], cols: &mut Columns) {
    let mut logsum = 0.0f64;
    let mut s = 1.0f64;
    // ln of the last (n - d): reused as ln n of the next row when nobody left or entered.
    let mut cache_n = u64::MAX;
    let mut cache_ln = 0.0f64;
    let Columns {
        time,
        n_at_risk,
        n_event,
        survival,
        n_entered,
    } = cols;
    merge_rows(ev, ce, en, |r| {
        if r.n > 0 && r.d > 0 {
            let d = r.d.min(r.n);
            if d == r.n {
                logsum = f64::NEG_INFINITY;
            } else {
                let ln_n = if cache_n == r.n {
                    cache_ln
                } else {
                    (r.n as f64).ln()
                };
                let m = r.n - d;
                let ln_m = (m as f64).ln();
                logsum += ln_m - ln_n;
                cache_n = m;
                cache_ln = ln_m;
            }
            s = logsum.exp();
        }
        time.push(key_f64(r.key));
        n_at_risk.push(r.n as Count);
        n_event.push(r.d as Count);
        survival.push(s);
        if let Some(e) = n_entered.as_mut() {
            e.push(r.e as Count);
        }
    });
}

// ------------------------------------------------------------------------------------------
// single curve
// ------------------------------------------------------------------------------------------

/// A fitted Kaplan–Meier curve (owned columns). Query it through [`KmFit::view`] or the
/// delegating methods; serialises as its columns
/// (`time`, `n_at_risk`, `n_event`, `survival`, and `n_entered` with entry times).
#[derive(Debug, Clone, Serialize)]
pub struct KmFit {
    #[serde(flatten)]
    cols: Columns,
}

impl KmFit {
    /// Fits right-censored data: `events[i]` true = event, false = censored at `durations[i]`.
    pub fn fit(durations: &[f64], events: &[bool]) -> Result<KmFit, SurvivalError> {
        Self::fit_data(&SurvivalData::new(durations, events))
    }

    /// Fits general data and its log(-log) Greenwood interval at normal quantile `z`: the fit
    /// and the bounds of [`KmView::confidence_interval`], computed with the curve in one pass
    /// on large right-censored data (the bounds then take ln S from the fit's running sum
    /// instead of the log of S, which moves them by a few units in the last place).
    #[allow(clippy::type_complexity)]
    pub fn fit_with_interval(
        data: &SurvivalData<'_>,
        z: f64,
    ) -> Result<(KmFit, Vec<f64>, Vec<f64>), SurvivalError> {
        if data.entry.is_none() && data.weights.is_none() && data.len() >= split::SPLIT_ROWS {
            data.validate()?;
            if let Some((cols, Some((lower, upper)))) =
                split::fit_split(data.durations, data.events, Some(z))
            {
                return Ok((KmFit { cols }, lower, upper));
            }
        }
        let fit = Self::fit_data(data)?;
        let (lower, upper) = fit.view().confidence_interval(z);
        Ok((fit, lower, upper))
    }

    /// Fits general data (optional entry times and integer weights).
    pub fn fit_data(data: &SurvivalData<'_>) -> Result<KmFit, SurvivalError> {
        data.validate()?;
        let with_entry = data.entry.is_some();
        let mut cols = Columns::new(with_entry);
        if data.weights.is_some() {
            let (ev, ce, en) = weighted_runs(data, 0..data.len());
            build_curve(&ev, &ce, &en, with_entry, &mut cols);
        } else if let Some(cols) = data
            .entry
            .is_none()
            .then(|| {
                if data.len() >= split::SPLIT_ROWS {
                    split::fit_split(data.durations, data.events, None).map(|(c, _)| c)
                } else {
                    fit_packed(None, data.durations, data.events, 1).map(|c| c.0)
                }
            })
            .flatten()
        {
            return Ok(KmFit { cols });
        } else {
            let n_ev = data.events.iter().filter(|&&e| e).count();
            let mut ev: Vec<u64> = Vec::with_capacity(n_ev + 1);
            let mut ce: Vec<u64> = Vec::with_capacity(data.len() - n_ev + 1);
            let mut min_t = f64::INFINITY;
            for (&t, &e) in data.durations.iter().zip(data.events) {
                min_t = min_t.min(t);
                if e {
                    ev.push(f64_key(t));
                } else {
                    ce.push(f64_key(t));
                }
            }
            ev.sort_unstable();
            ce.sort_unstable();
            ev.push(SENTINEL);
            ce.push(SENTINEL);
            match data.entry {
                Some(entry) => {
                    let mut en: Vec<u64> = Vec::with_capacity(entry.len() + 1);
                    en.extend(entry.iter().map(|&x| f64_key(x)));
                    en.sort_unstable();
                    en.push(SENTINEL);
                    build_curve(&ev, &ce, &en, true, &mut cols);
                }
                None => {
                    let birth = [
                        (f64_key(min_t.min(0.0)), data.len() as u64),
                        <(u64, u64)>::END,
                    ];
                    build_curve(&ev, &ce, &birth, false, &mut cols);
                }
            }
        }
        Ok(KmFit { cols })
    }

    /// The columns, moved out: timeline, at risk, events, survival.
    pub fn into_columns(self) -> (Vec<f64>, Vec<Count>, Vec<Count>, Vec<f64>) {
        let c = self.cols;
        (c.time, c.n_at_risk, c.n_event, c.survival)
    }

    /// Borrowed query view of the curve.
    pub fn view(&self) -> KmView<'_> {
        self.cols.view(0, self.cols.len())
    }

    /// Timeline (distinct times, ascending).
    pub fn timeline(&self) -> &[f64] {
        &self.cols.time
    }

    /// Product-limit estimate at each timeline time.
    pub fn survival_values(&self) -> &[f64] {
        &self.cols.survival
    }

    /// Right-continuous step lookup S(t); `None` before the first timeline point.
    pub fn survival_at(&self, t: f64) -> Option<f64> {
        self.view().survival_at(t)
    }

    /// Median survival time (first time with S ≤ 0.5 + 10⁻¹²), `None` if not reached.
    pub fn median(&self) -> Option<f64> {
        self.view().median()
    }
}

impl ConditionalSurvival for KmFit {
    fn survival(&self, t: f64) -> f64 {
        self.view().survival(t)
    }

    /// 0: the estimate is carried forward (flat) after the last timeline time.
    fn tail_hazard(&self) -> f64 {
        0.0
    }
}

/// Builds one curve into `cols`. Without entry times the table has at most
/// #durations + 1 rows, so that bound is reserved directly; with entry times the rows are
/// counted first (the bound 2n would over-allocate).
fn build_curve<E: KeyW, C: KeyW, N: KeyW>(
    ev: &[E],
    ce: &[C],
    en: &[N],
    with_entry: bool,
    cols: &mut Columns,
) {
    let rows = if with_entry {
        count_rows(ev, ce, en)
    } else {
        ev.len() + ce.len() - 1
    };
    cols.reserve_exact(rows);
    append_table(ev, ce, en, cols);
    if cols.time.capacity() > cols.len() + cols.len() / 8 + 16 {
        cols.shrink_to_fit();
    }
}

/// Weighted (key, weight) runs for the rows in `rows` (zero weights dropped), sorted and
/// terminated by `KeyW::END`.
#[allow(clippy::type_complexity)]
fn weighted_runs(
    data: &SurvivalData<'_>,
    rows: impl Iterator<Item = usize>,
) -> (Vec<(u64, u64)>, Vec<(u64, u64)>, Vec<(u64, u64)>) {
    let mut ev = Vec::new();
    let mut ce = Vec::new();
    let mut en = Vec::new();
    let mut min_t = f64::INFINITY;
    let mut total = 0u64;
    for i in rows {
        let w = data.weight(i);
        if w == 0 {
            continue;
        }
        let t = data.durations[i];
        min_t = min_t.min(t);
        total += w;
        if data.events[i] {
            ev.push((f64_key(t), w));
        } else {
            ce.push((f64_key(t), w));
        }
        if let Some(e) = data.entry {
            en.push((f64_key(e[i]), w));
        }
    }
    ev.sort_unstable_by_key(|p| p.0);
    ce.sort_unstable_by_key(|p| p.0);
    if data.entry.is_some() {
        en.sort_unstable_by_key(|p| p.0);
    } else if total > 0 {
        en.push((f64_key(min_t.min(0.0)), total));
    }
    ev.push(KeyW::END);
    ce.push(KeyW::END);
    en.push(KeyW::END);
    (ev, ce, en)
}

// ------------------------------------------------------------------------------------------
// grouped fast path
// ------------------------------------------------------------------------------------------

/// Kaplan–Meier curves of many groups (e.g. one per node) fitted from one counting sort by
/// group: O(rows + groups) plus small per-group sorts, no per-group allocation.
/// Each group's curve follows exactly the single-curve conventions (its own origin
/// min(0, min durations of the group) when there are no entry times).
#[derive(Debug, Clone, Serialize)]
pub struct GroupedKm {
    offsets: Vec<usize>,
    #[serde(flatten)]
    cols: Columns,
}

impl GroupedKm {
    /// Fits one curve per group id `groups[i]` ∈ 0..n_groups (default n_groups = max id + 1).
    /// Groups without rows get an empty curve ([`GroupedKm::group`] returns `None`).
    pub fn fit(
        groups: &[u32],
        data: &SurvivalData<'_>,
        n_groups: Option<usize>,
    ) -> Result<GroupedKm, SurvivalError> {
        data.validate()?;
        if groups.len() != data.len() {
            return Err(SurvivalError::LengthMismatch {
                what: "groups",
                expected: data.len(),
                got: groups.len(),
            });
        }
        let g_count = match n_groups {
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
        }
        let with_entry = data.entry.is_some();
        let mut cols = Columns::new(with_entry);
        let mut offsets = Vec::with_capacity(g_count + 1);
        offsets.push(0);
        if data.weights.is_some() {
            // weighted path: bucket row indices by group, then weighted runs per group
            let seg = bucket_offsets(groups, g_count, |_| true, 0);
            let mut idx = vec![0u32; data.len()];
            let mut pos = seg.clone();
            for (i, &g) in groups.iter().enumerate() {
                idx[pos[g as usize]] = i as u32;
                pos[g as usize] += 1;
            }
            for g in 0..g_count {
                let rows = idx[seg[g]..seg[g + 1]].iter().map(|&i| i as usize);
                let (ev, ce, en) = weighted_runs(data, rows);
                build_curve(&ev, &ce, &en, with_entry, &mut cols);
                offsets.push(cols.len());
            }
            return Ok(GroupedKm { offsets, cols });
        }
        if data.entry.is_none() {
            if let Some((cols, offsets)) =
                fit_packed(Some(groups), data.durations, data.events, g_count)
            {
                return Ok(GroupedKm { offsets, cols });
            }
        }
        // counting sort of the keys by group; each group segment ends with a sentinel
        let ev_off = bucket_offsets(groups, g_count, |i| data.events[i], 1);
        let ce_off = bucket_offsets(groups, g_count, |i| !data.events[i], 1);
        let mut ev = vec![SENTINEL; ev_off[g_count]];
        let mut ce = vec![SENTINEL; ce_off[g_count]];
        {
            let mut pe = ev_off.clone();
            let mut pc = ce_off.clone();
            for (i, (&g, &t)) in groups.iter().zip(data.durations).enumerate() {
                let g = g as usize;
                if data.events[i] {
                    ev[pe[g]] = f64_key(t);
                    pe[g] += 1;
                } else {
                    ce[pc[g]] = f64_key(t);
                    pc[g] += 1;
                }
            }
        }
        for g in 0..g_count {
            ev[ev_off[g]..ev_off[g + 1] - 1].sort_unstable();
            ce[ce_off[g]..ce_off[g + 1] - 1].sort_unstable();
        }
        let en_keys = data.entry.map(|entry| {
            let off = bucket_offsets(groups, g_count, |_| true, 1);
            let mut en = vec![SENTINEL; off[g_count]];
            let mut p = off.clone();
            for (&g, &x) in groups.iter().zip(entry) {
                en[p[g as usize]] = f64_key(x);
                p[g as usize] += 1;
            }
            for g in 0..g_count {
                en[off[g]..off[g + 1] - 1].sort_unstable();
            }
            (off, en)
        });
        let seg = |g: usize| (&ev[ev_off[g]..ev_off[g + 1]], &ce[ce_off[g]..ce_off[g + 1]]);
        let rows = match &en_keys {
            // exact count with entry times (the bound 2n would over-allocate)
            Some((off, en)) => (0..g_count)
                .map(|g| {
                    let (e, c) = seg(g);
                    count_rows(e, c, &en[off[g]..off[g + 1]])
                })
                .sum(),
            // at most one row per duration plus the origin of each group
            None => data.len() + g_count,
        };
        cols.reserve_exact(rows);
        for g in 0..g_count {
            let (e, c) = seg(g);
            match &en_keys {
                Some((off, en)) => append_table(e, c, &en[off[g]..off[g + 1]], &mut cols),
                None => append_table(e, c, &birth_run(e, c), &mut cols),
            }
            offsets.push(cols.len());
        }
        if cols.time.capacity() > cols.len() + cols.len() / 8 + 16 {
            cols.shrink_to_fit();
        }
        Ok(GroupedKm { offsets, cols })
    }

    /// Number of groups.
    pub fn n_groups(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The curve of group `g`; `None` when `g` is out of range or the group has no rows.
    pub fn group(&self, g: usize) -> Option<KmView<'_>> {
        let lo = *self.offsets.get(g)?;
        let hi = *self.offsets.get(g + 1)?;
        if lo == hi {
            None
        } else {
            Some(self.cols.view(lo, hi))
        }
    }
}

/// The "everybody enters at the origin min(0, min T)" run of a right-censored group
/// (sentinel-terminated key lists in, sentinel-terminated run out; empty group → no row).
fn birth_run(ev: &[u64], ce: &[u64]) -> [(u64, u64); 2] {
    let n = (ev.len() + ce.len() - 2) as u64;
    if n == 0 {
        return [<(u64, u64)>::END; 2];
    }
    let min_key = ev[0].min(ce[0]).min(f64_key(0.0));
    [(min_key, n), <(u64, u64)>::END]
}

/// Prefix offsets of a counting sort by group over the rows selected by `keep`, with
/// `extra` additional slots per group (for the sentinel).
fn bucket_offsets(
    groups: &[u32],
    g_count: usize,
    keep: impl Fn(usize) -> bool,
    extra: usize,
) -> Vec<usize> {
    let mut off = vec![0usize; g_count + 1];
    for (i, &g) in groups.iter().enumerate() {
        if keep(i) {
            off[g as usize + 1] += 1;
        }
    }
    for g in 0..g_count {
        off[g + 1] += off[g] + extra;
    }
    off
}

// ------------------------------------------------------------------------------------------
// queries
// ------------------------------------------------------------------------------------------

/// Borrowed view of one Kaplan–Meier event table; all queries live here.
#[derive(Debug, Clone, Copy)]
pub struct KmView<'a> {
    time: &'a [f64],
    n_at_risk: &'a [Count],
    n_event: &'a [Count],
    survival: &'a [f64],
    n_entered: Option<&'a [Count]>,
}

/// A conditional point mass: P(T = u | T > a) = (S(u−) − S(u)) / S(a).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Jump {
    /// Event time u (> a).
    pub u: f64,
    /// Conditional probability mass at u.
    pub mass: f64,
}

/// Conditional summary for a session that has survived to age `a`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConditionalSummary {
    /// Conditioning age a.
    pub a: f64,
    /// S(a) (`None` before the first timeline point).
    pub s_a: Option<f64>,
    /// False when S(a) is 0 or undefined; the other fields are then empty/`None`.
    pub defined: bool,
    /// Median residual life: first timeline x ≥ a with S(x) ≤ S(a)/2, minus a.
    pub median_residual: Option<f64>,
    /// (H, ∫_0^H S(a+u)/S(a) du) restricted mean residual life per requested horizon.
    pub rmrl: Vec<(f64, f64)>,
    /// Σ of the conditional jump masses at event times u > a.
    pub jump_mass_total: f64,
    /// S(t_max)/S(a): mass beyond the last observation (not determined by KM).
    pub tail_mass: f64,
}

/// The curve evaluated on a user grid (lifelines `timeline=`): step lookup ("pad"), no
/// interpolation; grid points before the first timeline time have survival `None`, CI [1, 1].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GridFit {
    /// Grid, sorted ascending.
    pub grid: Vec<f64>,
    /// S at each grid point.
    pub survival: Vec<Option<f64>>,
    /// Lower log(−log) confidence bound.
    pub ci_lower: Vec<f64>,
    /// Upper log(−log) confidence bound.
    pub ci_upper: Vec<f64>,
    /// First grid point with S ≤ 0.5 + 10⁻¹² (`None` if not reached on the grid).
    pub median: Option<f64>,
}

/// The full event table with all derived columns (for JSON output).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KmTable {
    /// Distinct times.
    pub timeline: Vec<f64>,
    /// n used for the hazard at each time.
    pub n_at_risk: Vec<Count>,
    /// Events d.
    pub n_event: Vec<Count>,
    /// Censorings.
    pub n_censored: Vec<Count>,
    /// Entrants.
    pub n_entered: Vec<Count>,
    /// Product-limit estimate.
    pub survival: Vec<f64>,
    /// Greenwood sum V = Σ d/(n(n−d)).
    pub greenwood_sum: Vec<f64>,
    /// Lower 95 % log(−log) bound.
    pub ci_lower: Vec<f64>,
    /// Upper 95 % log(−log) bound.
    pub ci_upper: Vec<f64>,
    /// Median (first time with S ≤ 0.5 + 10⁻¹²).
    pub median: Option<f64>,
}

impl<'a> KmView<'a> {
    /// Number of timeline rows.
    pub fn len(&self) -> usize {
        self.time.len()
    }

    /// True for an empty table.
    pub fn is_empty(&self) -> bool {
        self.time.is_empty()
    }

    /// Distinct times (ascending).
    pub fn timeline(&self) -> &'a [f64] {
        self.time
    }

    /// n(t_i): subjects at risk for the hazard at t_i.
    pub fn n_at_risk(&self) -> &'a [Count] {
        self.n_at_risk
    }

    /// d(t_i): events at t_i.
    pub fn n_event(&self) -> &'a [Count] {
        self.n_event
    }

    /// S(t_i).
    pub fn survival_values(&self) -> &'a [f64] {
        self.survival
    }

    /// Entrants at t_i (without entry times everybody enters on the first row).
    pub fn n_entered(&self) -> Vec<Count> {
        match self.n_entered {
            Some(e) => e.to_vec(),
            None => {
                let mut v = vec![0; self.len()];
                if let Some(first) = v.first_mut() {
                    *first = self.n_at_risk[0];
                }
                v
            }
        }
    }

    /// Censorings at t_i, derived from the risk-set recursion
    /// n_{i+1} = n_i + e_i·[i ≥ 1] − d_i − c_i (n_K = 0).
    pub fn n_censored(&self) -> Vec<Count> {
        let k = self.len();
        let entered = self.n_entered();
        (0..k)
            .map(|i| {
                let next = if i + 1 < k { self.n_at_risk[i + 1] } else { 0 };
                let inflow = self.n_at_risk[i] + if i >= 1 { entered[i] } else { 0 };
                inflow.saturating_sub(next).saturating_sub(self.n_event[i])
            })
            .collect()
    }

    /// Index of the last timeline time ≤ t (right-continuous step), `None` before the first.
    #[inline]
    pub fn index_at(&self, t: f64) -> Option<usize> {
        self.time.partition_point(|&x| x <= t).checked_sub(1)
    }

    /// S(t) by right-continuous step lookup; `None` before the first timeline time
    /// (lifelines `predict`), the last value carried forward after the last time.
    #[inline]
    pub fn survival_at(&self, t: f64) -> Option<f64> {
        self.index_at(t).map(|k| self.survival[k])
    }

    /// Greenwood sums V(t_i) = Σ_{k ≤ i} d_k / (n_k (n_k − d_k)), n = d terms set to 0.
    pub fn greenwood_sum(&self) -> Vec<f64> {
        let mut v = 0.0;
        self.n_at_risk
            .iter()
            .zip(self.n_event)
            .map(|(&n, &d)| {
                if n > 0 && d > 0 && d < n {
                    v += d as f64 / (n as f64 * (n - d) as f64);
                }
                v
            })
            .collect()
    }

    /// log(−log) confidence bounds at every timeline time (z = [`Z_95`] for 95 %):
    /// lower = exp(−exp(ln(−ln S) − z √V / ln S)), upper = exp(−exp(ln(−ln S) + z √V / ln S))
    /// (i.e. S^exp(±z √V / ln S)); S = 1 → [1, 1], S = 0 → [0, 0].
    pub fn confidence_interval(&self, z: f64) -> (Vec<f64>, Vec<f64>) {
        use rayon::prelude::*;
        let v = self.greenwood_sum();
        // Two logs and two exps per row: split over the cores on a long timeline.
        if v.len() >= PARALLEL_ROWS {
            return self
                .survival
                .par_iter()
                .zip(v.par_iter())
                .with_min_len(1 << 14)
                .map(|(&s, &v)| loglog_ci(s, v, z))
                .unzip();
        }
        self.survival
            .iter()
            .zip(&v)
            .map(|(&s, &v)| loglog_ci(s, v, z))
            .unzip()
    }

    /// First timeline time with S ≤ q + 10⁻¹² (lifelines `qth_survival_time`), `None` if never.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let thr = q + THRESHOLD_TOL;
        let i = self.survival.partition_point(|&s| s > thr);
        self.time.get(i).copied()
    }

    /// Median survival time: [`KmView::quantile`] at 0.5.
    pub fn median(&self) -> Option<f64> {
        self.quantile(0.5)
    }

    /// S(x)/S(a) for an absolute time x ≥ a; `None` when S(a) is 0 or a precedes the timeline.
    pub fn conditional_survival_at(&self, a: f64, x: f64) -> Option<f64> {
        let sa = self.survival_at(a)?;
        if sa <= 0.0 {
            return None;
        }
        let sx = self.survival_at(x.max(a))?;
        Some(sx / sa)
    }

    /// Restricted mean residual life RMRL(a, H) = ∫_0^H S(a+u)/S(a) du, exact for the step
    /// function (S flat after the last time); `None` when S(a) is 0 or undefined.
    pub fn rmrl(&self, a: f64, horizon: f64) -> Option<f64> {
        let k0 = self.index_at(a)?;
        let sa = self.survival[k0];
        if sa <= 0.0 {
            return None;
        }
        if horizon <= 0.0 {
            return Some(0.0);
        }
        let hi = a + horizon;
        let mut tot = 0.0;
        let mut x = a;
        let mut k = k0;
        loop {
            let end = match self.time.get(k + 1) {
                Some(&nxt) if nxt < hi => nxt,
                _ => hi,
            };
            tot += self.survival[k] * (end - x);
            if end == hi {
                break;
            }
            x = end;
            k += 1;
        }
        Some(tot / sa)
    }

    /// Median residual life at age a: (first timeline x ≥ a with S(x) ≤ S(a)·(0.5 + 10⁻¹²)) − a;
    /// `None` when not reached or S(a) is 0/undefined.
    pub fn median_residual(&self, a: f64) -> Option<f64> {
        let sa = self.survival_at(a)?;
        if sa <= 0.0 {
            return None;
        }
        let thr = sa * (0.5 + THRESHOLD_TOL);
        let start = self.time.partition_point(|&x| x < a);
        let i = start + self.survival[start..].partition_point(|&s| s > thr);
        self.time.get(i).map(|&x| x - a)
    }

    /// Conditional point masses (S(u−) − S(u)) / S(a) = S(u−)·(d/n) / S(a) at the event times
    /// u > a (rows with n > 0, d > 0); `None` when S(a) is 0 or undefined.
    pub fn jumps_after(&self, a: f64) -> Option<Vec<Jump>> {
        let sa = self.survival_at(a)?;
        if sa <= 0.0 {
            return None;
        }
        let start = self.time.partition_point(|&x| x <= a);
        let mut out = Vec::new();
        for i in start..self.len() {
            let (n, d) = (self.n_at_risk[i], self.n_event[i]);
            if n == 0 || d == 0 {
                continue;
            }
            let prev = if i > 0 { self.survival[i - 1] } else { 1.0 };
            let frac = d.min(n) as f64 / n as f64;
            out.push(Jump {
                u: self.time[i],
                mass: prev * frac / sa,
            });
        }
        Some(out)
    }

    /// S(t_max)/S(a): conditional mass beyond the last observation; `None` when undefined.
    pub fn tail_mass(&self, a: f64) -> Option<f64> {
        let sa = self.survival_at(a)?;
        if sa <= 0.0 {
            return None;
        }
        self.survival.last().map(|&s| s / sa)
    }

    /// All conditional quantities for age `a` and the RMRL horizons.
    pub fn conditional_summary(&self, a: f64, horizons: &[f64]) -> ConditionalSummary {
        let s_a = self.survival_at(a);
        let defined = matches!(s_a, Some(s) if s > 0.0);
        if !defined {
            return ConditionalSummary {
                a,
                s_a,
                defined,
                median_residual: None,
                rmrl: Vec::new(),
                jump_mass_total: 0.0,
                tail_mass: 0.0,
            };
        }
        let jumps = self.jumps_after(a).unwrap_or_default();
        ConditionalSummary {
            a,
            s_a,
            defined,
            median_residual: self.median_residual(a),
            rmrl: horizons
                .iter()
                .map(|&h| (h, self.rmrl(a, h).unwrap_or(f64::NAN)))
                .collect(),
            jump_mass_total: jumps.iter().map(|j| j.mass).sum(),
            tail_mass: self.tail_mass(a).unwrap_or(f64::NAN),
        }
    }

    /// Evaluates survival and CI on a user grid (lifelines `timeline=` semantics).
    pub fn on_grid(&self, grid: &[f64], z: f64) -> GridFit {
        let mut g: Vec<f64> = grid.to_vec();
        g.sort_by(f64::total_cmp);
        let (lo, hi) = self.confidence_interval(z);
        let mut out = GridFit {
            grid: Vec::with_capacity(g.len()),
            survival: Vec::with_capacity(g.len()),
            ci_lower: Vec::with_capacity(g.len()),
            ci_upper: Vec::with_capacity(g.len()),
            median: None,
        };
        for &x in &g {
            match self.index_at(x) {
                Some(k) => {
                    out.survival.push(Some(self.survival[k]));
                    out.ci_lower.push(lo[k]);
                    out.ci_upper.push(hi[k]);
                    if out.median.is_none() && self.survival[k] <= 0.5 + THRESHOLD_TOL {
                        out.median = Some(x);
                    }
                }
                None => {
                    out.survival.push(None);
                    out.ci_lower.push(1.0);
                    out.ci_upper.push(1.0);
                }
            }
            out.grid.push(x);
        }
        out
    }

    /// Full table with derived columns (Greenwood, 95 % CI, censored and entrant counts).
    pub fn table(&self) -> KmTable {
        let (ci_lower, ci_upper) = self.confidence_interval(Z_95);
        KmTable {
            timeline: self.time.to_vec(),
            n_at_risk: self.n_at_risk.to_vec(),
            n_event: self.n_event.to_vec(),
            n_censored: self.n_censored(),
            n_entered: self.n_entered(),
            survival: self.survival.to_vec(),
            greenwood_sum: self.greenwood_sum(),
            ci_lower,
            ci_upper,
            median: self.median(),
        }
    }

    /// Delayed-entry diagnostic (lifelines raises `StatError` here): the first time at which
    /// the risk set is exhausted (S drops to 0, or nobody is at risk) while subjects still enter
    /// later. The estimate is then 0 from that time on whatever the late entrants do; a
    /// conditional (e.g. Breslow/Fleming–Harrington or a shrunk) estimator is advisable.
    pub fn risk_set_gap(&self) -> Option<f64> {
        let entered = self.n_entered?;
        let i = (0..self.len()).find(|&i| {
            let (n, d) = (self.n_at_risk[i], self.n_event[i]);
            (n == 0 && i > 0) || (n > 0 && d >= n)
        })?;
        if entered[i + 1..].iter().any(|&e| e > 0) {
            Some(self.time[i])
        } else {
            None
        }
    }
}

/// log(−log) interval for one (S, V) pair.
#[inline]
fn loglog_ci(s: f64, v: f64, z: f64) -> (f64, f64) {
    loglog_ci_from_log(s.ln(), s, v, z)
}

/// [`loglog_ci`] with ln S given (`ls`; the fit's running sum, of which S is the exponential).
#[inline]
fn loglog_ci_from_log(ls: f64, s: f64, v: f64, z: f64) -> (f64, f64) {
    if s >= 1.0 {
        return (1.0, 1.0);
    }
    if s <= 0.0 {
        return (0.0, 0.0);
    }
    // exp(-exp(ln(-ln S) ∓ z se)) = exp(ln S · exp(∓z se)): three exponentials.
    let grow = (z * v.sqrt() / ls).exp();
    ((ls / grow).exp(), (ls * grow).exp())
}

/// The product-limit curve as the crate's one curve interface. Edges as in
/// [`crate::survival::curve`]: the conditional past the last event where S reaches 0 is the flat
/// tail (1), the same as the [`StepCurve`](crate::survival::curve::StepCurve) of the timeline
/// without a tail rate; [`ConditionalSurvival::conditional_checked`] answers `None` there
/// (lifelines: undefined), like [`KmView::conditional_survival_at`].
impl ConditionalSurvival for KmView<'_> {
    /// S(t); 1 before the first timeline time.
    #[inline]
    fn survival(&self, t: f64) -> f64 {
        self.survival_at(t).unwrap_or(1.0)
    }

    /// 0: the estimate is carried forward (flat) after the last timeline time.
    fn tail_hazard(&self) -> f64 {
        0.0
    }
}

#[path = "km_split.rs"]
mod split;

#[cfg(test)]
#[path = "km_tests.rs"]
mod tests;
