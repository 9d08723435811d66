//! Placement under forecast uncertainty: with estimated output lengths a forecast `T_i` is
//! uncertain, and the argmin of noisy forecasts is biased toward the nodes whose forecast is
//! too optimistic (their residents' lengths underestimated). Those nodes then receive more
//! work than they can take, which is how a cost-based policy came to lose to `least-loaded`
//! once lengths were estimated (the length-noise grid).
//!
//! The rule, the same for every cost-based policy (`fastest`, `hazard`, `hazard-nomigrate`,
//! `memoryless`, `hazard-truth`; the clairvoyant `oracle` knows every length): each feasible
//! node's forecast `F_i = T_i` (`T_i + D_i` under the `stationary` and `marginal` forecasts)
//! carries a spread `u_i = cv (T_i - T_i^0)`, where `T_i^0` is the node's unloaded service
//! time (what no estimate of the others' lengths can change) and `cv = sqrt(e^{s^2} - 1)` the
//! coefficient of variation of a length under the policies' posterior (log-sd `s`,
//! [`crate::policy::RequestView::est_sigma`]). A forecast within `z sqrt(u_i^2 + u_b^2)` of the
//! best `F_b` ([`TIE_BAND_Z`] standard errors) is not told apart from it: it counts as the
//! best's, and so does the exposure `T` its risk term is priced over (`L_i` at `T_b`: the
//! noise of `T` must not come back through `L`). Among those ties the least-loaded wins
//! (requests, then KV in use, then queue wait, as `least-loaded` ranks), then the safest
//! (lowest risk term: `L_i` for the hazard-aware policies, 0 for `fastest`), then the lower
//! forecast, then the earlier node; that pick, scored `F_b + L`, then competes with the best
//! node outside the band, scored `F_i + L_i`. So `fastest` picks the least-loaded node among
//! those whose forecast is within its error of the best, and `hazard` the same unless a node
//! outside the band is cheaper once risk is priced, or two tie on load too. Risk first would
//! send every request to the one safest node while the band is wide (every node, on phones
//! with long outputs): measured 6 s slower than `fastest` on the two-class control. With
//! exact lengths `cv = 0` and the rule is the plain argmin.

use super::model::NodeIdx;

/// Standard errors within which two scores are a tie.
pub const TIE_BAND_Z: f64 = 1.0;

/// The coefficient of variation of a log-normal length with log-sd `sigma`: 0 for exact
/// lengths.
#[inline]
pub fn length_cv(sigma: f64) -> f64 {
    if sigma > 0.0 && sigma.is_finite() {
        (sigma * sigma).exp_m1().sqrt()
    } else {
        0.0
    }
}

/// One feasible node as the rule reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// The node.
    pub node: NodeIdx,
    /// Its forecast `F_i` (lower is better; NaN counts as infinite), seconds.
    pub forecast: f64,
    /// Its risk term added to the forecast (`L_i`; 0 for `fastest`), seconds.
    pub risk: f64,
    /// The forecast's spread `u_i` (one standard error), seconds.
    pub spread: f64,
    /// Its load as `least-loaded` ranks it (requests, KV in use, queue wait).
    pub load: (f64, f64, f64),
}

/// The best forecast (NaN as infinite; ties to the earlier node): its position, `F_b` and
/// `u_b` (`None` when empty).
pub fn anchor(scored: &[Scored]) -> Option<(usize, f64, f64)> {
    let best = (0..scored.len()).fold(None, |b: Option<usize>, k| match b {
        Some(b) if !(inf(scored[k].forecast) < inf(scored[b].forecast)) => Some(b),
        _ => Some(k),
    })?;
    Some((best, inf(scored[best].forecast), scored[best].spread))
}

/// Whether `s`'s forecast is within `z` standard errors of the anchor's `(F_b, u_b)`.
pub fn in_band(s: &Scored, (fb, ub): (f64, f64), z: f64) -> bool {
    inf(s.forecast) - fb <= z * (s.spread * s.spread + ub * ub).sqrt()
}

/// The position in `scored` of the node the rule picks (`None` when empty). The nodes whose
/// forecast is within the band ([`in_band`]) are told apart by load first (requests, KV in
/// use, queue wait), then by `risk` (which the caller prices over the same exposure), then by
/// forecast, then by position; the band's pick, scored `F_b + risk`, then competes with the
/// best node outside the band, scored `F_i + risk_i` (ties to the band).
pub fn choose(scored: &[Scored], z: f64) -> Option<usize> {
    let (_, fb, ub) = anchor(scored)?;
    let mut band: Option<usize> = None;
    let mut outside: Option<usize> = None;
    for (k, s) in scored.iter().enumerate() {
        if in_band(s, (fb, ub), z) {
            let better = match band {
                None => true,
                Some(b) => {
                    let p = &scored[b];
                    let key = |x: &Scored| (x.load.0, x.load.1, x.load.2, inf(x.risk));
                    match key(s).partial_cmp(&key(p)) {
                        Some(std::cmp::Ordering::Less) => true,
                        Some(std::cmp::Ordering::Equal) => inf(s.forecast) < inf(p.forecast),
                        _ => false,
                    }
                }
            };
            if better {
                band = Some(k);
            }
        } else {
            let score = |x: &Scored| inf(inf(x.forecast) + x.risk);
            if outside.is_none_or(|o| score(s) < score(&scored[o])) {
                outside = Some(k);
            }
        }
    }
    match (band, outside) {
        (Some(b), Some(o)) => {
            let sb = inf(fb + scored[b].risk);
            let so = inf(inf(scored[o].forecast) + scored[o].risk);
            Some(if so < sb { o } else { b })
        }
        (b, o) => b.or(o),
    }
}

/// NaN as infinite.
#[inline]
fn inf(x: f64) -> f64 {
    if x.is_nan() {
        f64::INFINITY
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(node: NodeIdx, forecast: f64, spread: f64, load: f64) -> Scored {
        Scored {
            node,
            forecast,
            risk: 0.0,
            spread,
            load: (load, 0.0, 0.0),
        }
    }

    #[test]
    fn without_spread_it_is_the_argmin() {
        let v = [
            s(0, 3.0, 0.0, 0.0),
            s(1, 2.0, 0.0, 9.0),
            s(2, 2.0, 0.0, 0.0),
        ];
        // Exact ties of the forecast are still broken by load.
        assert_eq!(choose(&v, 1.0), Some(2));
        let v = [s(0, 3.0, 0.0, 0.0), s(1, 2.0, 0.0, 9.0)];
        assert_eq!(choose(&v, 1.0), Some(1));
        assert_eq!(choose(&[], 1.0), None);
    }

    #[test]
    fn forecasts_within_their_error_are_ties_broken_by_load_then_risk() {
        // 2.0 +- 0.5 and 2.4 +- 0.5: within sqrt(0.5) of each other; the lighter wins.
        let v = [
            s(0, 2.0, 0.5, 3.0),
            s(1, 2.4, 0.5, 1.0),
            s(2, 9.0, 0.5, 0.0),
        ];
        assert_eq!(choose(&v, 1.0), Some(1));
        // Far outside the band, the load does not matter.
        assert_eq!(choose(&v, 0.1), Some(0));
        // With a risk term, the band's pick is still the lighter node; equal loads fall to
        // the safer; a node outside the band wins only when cheaper once risk is priced.
        let mut r = v;
        r[0].risk = 0.1;
        r[1].risk = 0.3;
        assert_eq!(choose(&r, 1.0), Some(1));
        r[0].load.0 = 1.0;
        assert_eq!(choose(&r, 1.0), Some(0));
        r[0].risk = 9.0;
        r[1].risk = 9.0;
        assert_eq!(choose(&r, 1.0), Some(2));
        // NaN never wins.
        let v = [s(0, f64::NAN, 0.0, 0.0), s(1, 5.0, 0.0, 3.0)];
        assert_eq!(choose(&v, 1.0), Some(1));
    }

    #[test]
    fn cv_of_a_lognormal_length() {
        assert_eq!(length_cv(0.0), 0.0);
        assert!((length_cv(0.5) - (0.25f64.exp() - 1.0).sqrt()).abs() < 1e-12);
    }
}
