//! Competing risks: the Aalen-Johansen cumulative incidence of each end cause with its
//! variance and 95 % interval, and each cause's Nelson-Aalen cumulative hazard, on the
//! Kaplan-Meier event table of "any cause" ([`super::km`]: right censoring, left truncation,
//! ties). Tested against `cases-v2`'s `cr_*` golden cases (lifelines 0.30.3 formulas).
//!
//! With `S` the Kaplan-Meier survival of any cause, `n_j` at risk and `d_kj` events of cause
//! `k` at time `t_j` (`d_j` of any cause):
//!
//! * **cumulative incidence** `F_k(t) = sum_{t_j <= t} S(t_{j-1}) d_kj / n_j`, so
//!   `S(t) + sum_k F_k(t) = 1` at every time;
//! * **variance** (Collett, *Modelling Survival Data in Medical Research*, 3rd ed., p. 411; as
//!   lifelines' `AalenJohansenFitter` and SAS LIFETEST):
//!   `V(t) = sum_j (F(t) - F_j)^2 d_j / (n_j (n_j - d_j)) + sum_j S_{j-1}^2 d_kj (n_j - d_kj) / n_j^3
//!   - 2 sum_j (F(t) - F_j) S_{j-1} d_kj / n_j^2`, the sums over `t_j <= t`. It is undefined
//!   (NaN) from the first row where everyone at risk ends (`n_j = d_j`, e.g. a lifetime cap);
//! * **interval**: log(-log) transformed, `F^exp(+-z sqrt(V) / (F |ln F|))`; NaN where `F = 0`.
//!
//! The first two sums are carried forward without cancellation: moving from `t` to `t'` with
//! `F(t') = F(t) + delta`, `Q' = Q + 2 delta R + delta^2 A` and `R' = R + delta A`, where
//! `Q = sum a_j (F - F_j)^2`, `R = sum a_j (F - F_j)`, `A = sum a_j` (every term non-negative).
//!
//! **Entry times** (left truncation): the risk set at `t` is `#{entry < t <= T}`, the
//! product-limit rule, so a session entering at `t` is not at risk for an end at `t`
//! (lifelines' own AJ counts it there; its KM and Nelson-Aalen do not, and neither does this).
//! **Ties** between causes are kept as ties (lifelines jitters them at random).

use super::km::{f64_key, key_f64, KmFit};
use super::nelson_aalen::{from_counts, NelsonAalen};
use super::{SurvivalData, SurvivalError, Z_95};

/// One cause's cumulative incidence (its variance and interval by
/// [`CompetingRisks::variance`] and [`CompetingRisks::interval`], its hazard by
/// [`CompetingRisks::cause_hazard`], each computed when asked, as Kaplan-Meier's Greenwood sums
/// are).
#[derive(Debug, Clone, PartialEq)]
pub struct CauseIncidence {
    /// The cause's code (as given, never 0).
    pub cause: u32,
    /// Ends of this cause at each time.
    pub n_event: Vec<u32>,
    /// Cumulative incidence `F_k(t)`.
    pub cif: Vec<f64>,
}

/// An Aalen-Johansen fit: one row per time of the all-cause event table.
#[derive(Debug, Clone, PartialEq)]
pub struct CompetingRisks {
    /// Distinct times (ascending; the origin `min(0, min T)` first without entry times).
    pub timeline: Vec<f64>,
    /// At risk at each time.
    pub n_at_risk: Vec<u32>,
    /// Ends of any cause at each time.
    pub n_event_any: Vec<u32>,
    /// Kaplan-Meier survival of any cause.
    pub overall_survival: Vec<f64>,
    /// One entry per cause present, in ascending code order.
    pub causes: Vec<CauseIncidence>,
}

impl CompetingRisks {
    /// The variance of `cause`'s incidence at every time (module docs; NaN from the first row
    /// where everyone at risk ends). `None` when the cause did not occur.
    pub fn variance(&self, cause: u32) -> Option<Vec<f64>> {
        let k = self.cause(cause)?;
        Some(collett_variance(
            &self.n_at_risk,
            &self.n_event_any,
            &self.overall_survival,
            &k.n_event,
            &k.cif,
        ))
    }

    /// The variance of a cause that never occurred (its incidence 0 throughout): 0, and NaN
    /// from the first row where everyone at risk ends, as [`Self::variance`] would give.
    pub fn variance_without_events(&self) -> Vec<f64> {
        let n = self.timeline.len();
        collett_variance(
            &self.n_at_risk,
            &self.n_event_any,
            &self.overall_survival,
            &vec![0; n],
            &vec![0.0; n],
        )
    }

    /// The 95 % interval of `cause`'s incidence at every time, `(lower, upper)` (module docs;
    /// NaN where undefined). `None` when the cause did not occur.
    pub fn interval(&self, cause: u32) -> Option<(Vec<f64>, Vec<f64>)> {
        let k = self.cause(cause)?;
        let v = self.variance(cause)?;
        Some(
            k.cif
                .iter()
                .zip(&v)
                .map(|(&f, &v)| {
                    if f > 0.0 && !v.is_nan() {
                        let se = v.sqrt() / (f * f.ln().abs());
                        let lf = (-f.ln()).ln();
                        (
                            (-(lf + Z_95 * se).exp()).exp(),
                            (-(lf - Z_95 * se).exp()).exp(),
                        )
                    } else {
                        (f64::NAN, f64::NAN)
                    }
                })
                .unzip(),
        )
    }

    /// The cause-specific Nelson-Aalen cumulative hazard of `cause` on the all-cause risk set
    /// (`smoothed`: ties broken one at a time, as lifelines; else `d / n`, as R and
    /// scikit-survival). `None` when the cause did not occur.
    pub fn cause_hazard(&self, cause: u32, smoothed: bool) -> Option<NelsonAalen> {
        let k = self.cause(cause)?;
        Some(from_counts(
            self.timeline.clone(),
            self.n_at_risk.clone(),
            k.n_event.clone(),
            smoothed,
        ))
    }

    /// The row of time `t` (last timeline time `<= t`), `None` before the first.
    pub fn index_at(&self, t: f64) -> Option<usize> {
        self.timeline.partition_point(|&x| x <= t).checked_sub(1)
    }

    /// The cause with code `cause`, if it occurred.
    pub fn cause(&self, cause: u32) -> Option<&CauseIncidence> {
        self.causes.iter().find(|c| c.cause == cause)
    }
}

/// The Aalen-Johansen estimate (module docs). `causes[i]` is the end cause of row `i`, 0 for
/// censored; `entry` the optional entry ages. Errors as [`KmFit::fit_data`], and
/// [`SurvivalError::LengthMismatch`] when `causes` is not as long as `durations`.
pub fn aalen_johansen(
    durations: &[f64],
    causes: &[u32],
    entry: Option<&[f64]>,
) -> Result<CompetingRisks, SurvivalError> {
    if causes.len() != durations.len() {
        return Err(SurvivalError::LengthMismatch {
            what: "causes",
            expected: durations.len(),
            got: causes.len(),
        });
    }
    let events: Vec<bool> = causes.iter().map(|&c| c != 0).collect();
    let mut data = SurvivalData::new(durations, &events);
    if let Some(e) = entry {
        data = data.with_entry(e);
    }
    // Cause codes present, ascending.
    let mut codes: Vec<u32> = Vec::new();
    let mut last = 0;
    for &c in causes {
        if c != 0 && c != last {
            if let Err(i) = codes.binary_search(&c) {
                codes.insert(i, c);
            }
            last = c;
        }
    }
    // The all-cause table on this thread while another sorts the end times of every cause
    // but the last (order-preserving keys); the last cause's counts are the rest.
    let sorted_ends = |codes: &[u32]| -> Vec<Vec<u64>> {
        let k = codes.len().saturating_sub(1);
        let mut ends: Vec<Vec<u64>> = vec![Vec::new(); k];
        for (&t, &c) in durations.iter().zip(causes) {
            if c == 0 {
                continue;
            }
            if let Ok(i) = codes[..k].binary_search(&c) {
                ends[i].push(f64_key(t));
            }
        }
        for e in &mut ends {
            e.sort_unstable();
        }
        ends
    };
    let (fit, ends) = std::thread::scope(|sc| {
        let other = sc.spawn(|| sorted_ends(&codes));
        let fit = KmFit::fit_data(&data);
        let ends = other
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (fit, ends)
    });
    let (timeline, n_at_risk, n_any, surv) = fit?.into_columns();
    // Each cause's ends per row (a merge of its sorted times with the timeline: every duration
    // is a timeline time, by exact float equality) and its incidence, the sorted causes split
    // between this thread and another; the last cause's counts are the rest.
    let merged = |keys: &Vec<u64>| {
        let mut d = vec![0u32; timeline.len()];
        let mut i = 0;
        for &key in keys {
            let t = key_f64(key);
            while timeline[i] < t {
                i += 1;
            }
            d[i] += 1;
        }
        let cif = incidence(&d, &n_at_risk, &surv);
        (d, cif)
    };
    let half = ends.len() / 2;
    let mut per_cause: Vec<(Vec<u32>, Vec<f64>)> = std::thread::scope(|sc| {
        let other = sc.spawn(|| ends[..half].iter().map(merged).collect::<Vec<_>>());
        let mine: Vec<_> = ends[half..].iter().map(merged).collect();
        let mut all = other
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        all.extend(mine);
        all
    });
    if !codes.is_empty() {
        let mut last = n_any.clone();
        for (d, _) in &per_cause {
            for (x, &y) in last.iter_mut().zip(d) {
                *x -= y;
            }
        }
        let cif = incidence(&last, &n_at_risk, &surv);
        per_cause.push((last, cif));
    }
    let out_causes: Vec<CauseIncidence> = codes
        .iter()
        .zip(per_cause)
        .map(|(&cause, (n_event, cif))| CauseIncidence {
            cause,
            n_event,
            cif,
        })
        .collect();
    Ok(CompetingRisks {
        timeline,
        n_at_risk,
        n_event_any: n_any,
        overall_survival: surv,
        causes: out_causes,
    })
}

/// One cause's Aalen-Johansen incidence from its ends per row `d_k`:
/// `F_k(t_j) = sum_{i <= j} S(t_{i-1}) d_ki / n_i`.
fn incidence(d_k: &[u32], n_at_risk: &[u32], surv: &[f64]) -> Vec<f64> {
    let mut cif = Vec::with_capacity(d_k.len());
    let (mut f, mut lag_s) = (0.0, 1.0);
    for j in 0..d_k.len() {
        if d_k[j] > 0 && n_at_risk[j] > 0 {
            f += lag_s * f64::from(d_k[j]) / f64::from(n_at_risk[j]);
        }
        cif.push(f);
        lag_s = surv[j];
    }
    cif
}

/// The Collett variance of one cause's incidence (module docs), by running sums.
fn collett_variance(
    n_at_risk: &[u32],
    n_any: &[u32],
    surv: &[f64],
    d_k: &[u32],
    cif: &[f64],
) -> Vec<f64> {
    let rows = d_k.len();
    let mut variance = Vec::with_capacity(rows);
    // Running sums (module docs): A = sum a_j, Q = sum a_j (F - F_j)^2, R = sum a_j (F - F_j),
    // C = sum c_j and T = sum c_j (F - F_j) with c_j = S_{j-1} d_kj / n_j^2, and the second term.
    let (mut f, mut a_sum, mut q, mut r, mut c_sum, mut t3, mut second) =
        (0.0f64, 0.0f64, 0.0f64, 0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let mut undefined = false;
    let mut lag_s = 1.0;
    for j in 0..rows {
        let (n, d, dk) = (
            f64::from(n_at_risk[j]),
            f64::from(n_any[j]),
            f64::from(d_k[j]),
        );
        let delta = cif[j] - f;
        // Move every carried sum from F to F + delta (F_j of past rows unchanged).
        q += 2.0 * delta * r + delta * delta * a_sum;
        r += delta * a_sum;
        t3 += delta * c_sum;
        f = cif[j];
        // This row's own terms (F - F_j = 0 for j = current row).
        if d > 0.0 {
            if n > d {
                a_sum += d / (n * (n - d));
            } else {
                undefined = true;
            }
        }
        if dk > 0.0 && n > 0.0 {
            second += lag_s * lag_s * dk * (n - dk) / (n * n * n);
            c_sum += lag_s * dk / (n * n);
        }
        variance.push(if undefined {
            f64::NAN
        } else {
            q + second - 2.0 * t3
        });
        lag_s = surv[j];
    }
    variance
}
