//! The single-curve right-censored fit on every core: the packed exits are sorted as two halves
//! at once (one per core), merged by time in the one scan that builds the event table, and the
//! product-limit terms and their exponentials are computed over the rows in parallel, with only
//! the running sum in between done in order. The numbers are those of the serial
//! `fit_packed` bit for bit (the same terms, summed in the same order); the unit tests hold the
//! two paths to that.

use rayon::prelude::*;

use super::{f64_key, key_f64, Columns, Count, SENTINEL};

/// The number of observations from which [`fit_split`] is used: below it the serial fit is as
/// fast (the second core's start-up is not paid back).
pub(super) const SPLIT_ROWS: usize = 1 << 16;

/// Rows per parallel task of the per-row passes.
const ROWS_PER_TASK: usize = 1 << 14;

/// Packs one half's exits as `(key << 1) | event`, sorts them and ends them with a sentinel
/// (no packed exit equals [`SENTINEL`]: the largest is that of the smallest negative
/// subnormal, `…FD`).
fn sorted_half(durations: &[f64], events: &[bool]) -> Vec<u64> {
    let mut keys = Vec::with_capacity(durations.len() + 1);
    keys.extend(
        durations
            .iter()
            .zip(events)
            .map(|(&t, &e)| (f64_key(t) << 1) | e as u64),
    );
    keys.sort_unstable();
    keys.push(SENTINEL);
    keys
}

/// Rows of a stretch of exits: each distinct time (packed, without its top bit), its events,
/// and the exits up to and including it (counted from the first exit of all).
struct Merged {
    keys: Vec<u64>,
    events: Vec<Count>,
    ends: Vec<Count>,
}

/// Merges the first `count` exits of two sorted runs into rows, in one pass without branches on
/// the data: slot r holds the last time seen, its events so far and the exits up to it. Each
/// run must go on past its share with a larger key (the next stretch's first exit, or the
/// sentinel), which stops it; `before` exits precede the stretch.
fn merge(a: &[u64], b: &[u64], count: usize, before: usize) -> Merged {
    let mut keys = vec![0u64; count];
    let mut events = vec![0 as Count; count];
    let mut ends = vec![0 as Count; count];
    let (mut i, mut j) = (0usize, 0usize);
    let mut r = usize::MAX;
    let mut prev = u64::MAX;
    let mut d: Count = 0;
    for exits in before + 1..=before + count {
        let (ka, kb) = (a[i], b[j]);
        let from_a = ka <= kb;
        let k = if from_a { ka } else { kb };
        i += from_a as usize;
        j += !from_a as usize;
        let t = k >> 1;
        let new = t != prev;
        r = r.wrapping_add(new as usize);
        d = if new { 0 } else { d } + (k & 1) as Count;
        keys[r] = t;
        events[r] = d;
        ends[r] = exits as Count;
        prev = t;
    }
    let rows = r.wrapping_add(1);
    keys.truncate(rows);
    events.truncate(rows);
    ends.truncate(rows);
    Merged { keys, events, ends }
}

/// A curve's columns and, when asked for, its interval's lower and upper bounds.
pub(super) type Fitted = (Columns, Option<(Vec<f64>, Vec<f64>)>);

/// Fits one right-censored curve (no entry times, no weights), with the log(-log) interval at
/// normal quantile `z` when given. `None` when the durations have mixed signs (the packed key
/// drops the top bit of the time key, which must be the same for every duration) or there are
/// none.
pub(super) fn fit_split(durations: &[f64], events: &[bool], z: Option<f64>) -> Option<Fitted> {
    let top = f64_key(*durations.first()?) & (1 << 63);
    if durations
        .par_iter()
        .with_min_len(ROWS_PER_TASK)
        .any(|&t| f64_key(t) & (1 << 63) != top)
    {
        return None;
    }
    let total = durations.len() as u64;
    let mid = durations.len() / 2;
    let (a, b) = rayon::join(
        || sorted_half(&durations[..mid], &events[..mid]),
        || sorted_half(&durations[mid..], &events[mid..]),
    );
    // The origin row (S = 1, everyone at risk) when every duration is after 0.
    let first = (a[0] >> 1).min(b[0] >> 1) | top;
    let zero = f64_key(0.0);
    let origin = (first.min(zero) != first).then_some(zero);
    // The exits before the median of the first half's times are merged on one core, the rest
    // on the other.
    let pivot = a[a.len() / 2] >> 1;
    let (i0, j0) = (
        a.partition_point(|&k| k >> 1 < pivot),
        b.partition_point(|&k| k >> 1 < pivot),
    );
    let (early, late) = rayon::join(
        || merge(&a[..=i0], &b[..=j0], i0 + j0, 0),
        || merge(&a[i0..], &b[j0..], a.len() + b.len() - 2 - i0 - j0, i0 + j0),
    );
    drop((a, b));
    // The two stretches' rows, one after the other, written in parallel: n at risk is everyone
    // less the exits before the row.
    let lead = origin.map(|o| (o, total as Count));
    let mut time: Vec<f64> = Vec::new();
    let mut n_event: Vec<Count> = Vec::new();
    let mut n_at_risk: Vec<Count> = Vec::new();
    let keys = early.keys.par_iter().chain(&late.keys);
    let ends = early.ends.par_iter().chain(&late.ends);
    let lead_keys = lead.into_par_iter().map(|(o, _)| key_f64(o));
    lead_keys
        .chain(keys.map(|&t| key_f64(t | top)))
        .collect_into_vec(&mut time);
    let lead_counts = lead.into_par_iter().map(|_| 0);
    lead_counts
        .chain(early.events.par_iter().chain(&late.events).copied())
        .collect_into_vec(&mut n_event);
    let rows = time.len();
    lead.into_par_iter()
        .map(|(_, n)| n)
        .chain(rayon::iter::once(total as Count))
        .chain(ends.map(|&e| total as Count - e))
        .take(rows)
        .collect_into_vec(&mut n_at_risk);
    drop((early, late));
    // ln(n - d) - ln n per row (-inf where everyone at risk ends, 0 without events), summed in
    // order, then S = exp(sum): the serial fit's terms and order.
    let mut survival: Vec<f64> = Vec::with_capacity(time.len());
    n_at_risk
        .par_iter()
        .zip(&n_event)
        .with_min_len(ROWS_PER_TASK)
        .map(|(&n, &d)| match (n, d) {
            (_, 0) => 0.0,
            (n, d) if d == n => f64::NEG_INFINITY,
            (n, d) => (f64::from(n - d)).ln() - f64::from(n).ln(),
        })
        .collect_into_vec(&mut survival);
    // The running sums in order: ln S, and with an interval the Greenwood sum V too; then
    // S = exp(ln S) and the log(-log) interval S^exp(∓z √V / ln S) per row, in parallel.
    let mut sum = 0.0f64;
    let interval = match z {
        None => {
            for x in &mut survival {
                sum += *x;
                *x = sum;
            }
            survival
                .par_iter_mut()
                .with_min_len(ROWS_PER_TASK)
                .for_each(|x| *x = x.exp());
            None
        }
        Some(z) => {
            let mut greenwood = 0.0f64;
            let mut lower: Vec<f64> = Vec::with_capacity(survival.len());
            for ((x, &n), &d) in survival.iter_mut().zip(&n_at_risk).zip(&n_event) {
                sum += *x;
                *x = sum;
                if n > 0 && d > 0 && d < n {
                    greenwood += f64::from(d) / (f64::from(n) * f64::from(n - d));
                }
                lower.push(greenwood);
            }
            let mut upper = vec![0.0; survival.len()];
            survival
                .par_iter_mut()
                .zip(&mut lower)
                .zip(&mut upper)
                .with_min_len(ROWS_PER_TASK)
                .for_each(|((s, lo), up)| {
                    let ls = *s;
                    *s = ls.exp();
                    (*lo, *up) = super::loglog_ci_from_log(ls, *s, *lo, z);
                });
            Some((lower, upper))
        }
    };
    let mut cols = Columns {
        time,
        n_at_risk,
        n_event,
        survival,
        n_entered: None,
    };
    cols.shrink_to_fit();
    Some((cols, interval))
}
