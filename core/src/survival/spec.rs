//! A survival curve as data ([`CurveSpec`]): what a curve of [this module](super) is made of,
//! written by [`ConditionalSurvival::spec`] and rebuilt by [`CurveSpec::build`] into a curve
//! that answers every query with the same bits. A decision log carries its nodes' curves
//! this way, so that another implementation of the policy (the Python package) prices the
//! same curves.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{
    ConditionalSurvival, CurveError, Exponential, LinearCurve, StepCurve, Weibull, WeibullTail,
};

/// A curve of [this module](super) as data (JSON: an object tagged by `kind`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum CurveSpec {
    /// [`Exponential`] with mean `mean_s` (`null` in JSON: infinite, a node that never fails).
    Exponential {
        /// Mean session length, seconds.
        #[serde(with = "inf_as_null")]
        mean_s: f64,
    },
    /// [`Weibull`].
    Weibull {
        /// Shape `k`.
        shape: f64,
        /// Scale, seconds.
        scale_s: f64,
    },
    /// [`StepCurve`]: jump times, the survival from each on, the tail hazard per second.
    Steps {
        /// Jump times, seconds.
        times: Vec<f64>,
        /// Survival from each jump time on.
        values: Vec<f64>,
        /// Exponential tail hazard after the last knot, per second (0: flat).
        tail_rate_per_s: f64,
    },
    /// [`LinearCurve`] over these steps.
    Linear {
        /// Jump times, seconds.
        times: Vec<f64>,
        /// Survival at each knot.
        values: Vec<f64>,
        /// Exponential tail hazard after the last knot, per second (0: flat).
        tail_rate_per_s: f64,
    },
    /// [`WeibullTail`]: `inner` (steps or linear) up to `last_t_s`, a Weibull after it.
    WeibullTail {
        /// The curve up to its last knot.
        inner: Box<CurveSpec>,
        /// The last knot, seconds.
        last_t_s: f64,
        /// Weibull shape.
        shape: f64,
        /// Weibull scale, seconds.
        scale_s: f64,
    },
}

/// Why a [`CurveSpec`] does not describe a curve.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    /// The steps are not a survival curve.
    #[error("{0}")]
    Steps(CurveError),
    /// A parameter is not finite and positive.
    #[error("{0} must be finite and positive")]
    Parameter(&'static str),
    /// A Weibull tail's inner curve is neither steps nor linear.
    #[error("a weibull-tail's inner curve must be `steps` or `linear`")]
    Inner,
}

impl CurveSpec {
    /// The curve this spec describes.
    pub fn build(&self) -> Result<Arc<dyn ConditionalSurvival>, SpecError> {
        Ok(match self {
            CurveSpec::Exponential { mean_s } => Arc::new(Exponential { mean: *mean_s }),
            CurveSpec::Weibull { shape, scale_s } => {
                Arc::new(Weibull::new(*shape, *scale_s).ok_or(SpecError::Parameter("weibull"))?)
            }
            CurveSpec::Steps { .. } => Arc::new(self.steps()?),
            CurveSpec::Linear { .. } => Arc::new(LinearCurve::new(self.steps()?)),
            CurveSpec::WeibullTail {
                inner,
                last_t_s,
                shape,
                scale_s,
            } => {
                let bad = SpecError::Parameter("weibull-tail shape and scale");
                match inner.as_ref() {
                    CurveSpec::Steps { .. } => Arc::new(
                        WeibullTail::new(inner.steps()?, *last_t_s, *shape, *scale_s).ok_or(bad)?,
                    ),
                    CurveSpec::Linear { .. } => Arc::new(
                        WeibullTail::new(
                            LinearCurve::new(inner.steps()?),
                            *last_t_s,
                            *shape,
                            *scale_s,
                        )
                        .ok_or(bad)?,
                    ),
                    _ => return Err(SpecError::Inner),
                }
            }
        })
    }

    /// The step curve of a `steps` or `linear` spec.
    fn steps(&self) -> Result<StepCurve, SpecError> {
        match self {
            CurveSpec::Steps {
                times,
                values,
                tail_rate_per_s,
            }
            | CurveSpec::Linear {
                times,
                values,
                tail_rate_per_s,
            } => StepCurve::new(times.clone(), values.clone(), Some(*tail_rate_per_s))
                .map_err(SpecError::Steps),
            _ => Err(SpecError::Inner),
        }
    }

    /// The spec of step curve `c` (`linear`: read linearly between its knots).
    pub(super) fn of_steps(c: &StepCurve, linear: bool) -> CurveSpec {
        let (times, values, tail_rate_per_s) = (c.times.clone(), c.survival.clone(), c.tail_rate);
        if linear {
            CurveSpec::Linear {
                times,
                values,
                tail_rate_per_s,
            }
        } else {
            CurveSpec::Steps {
                times,
                values,
                tail_rate_per_s,
            }
        }
    }

    /// The spec of a Weibull tail over `inner`'s spec.
    pub(super) fn of_tail<C: ConditionalSurvival>(c: &WeibullTail<C>) -> Option<CurveSpec> {
        Some(CurveSpec::WeibullTail {
            inner: Box::new(c.inner.spec()?),
            last_t_s: c.last_t,
            shape: c.shape,
            scale_s: c.scale,
        })
    }
}

/// `f64` with infinity as JSON `null` (which JSON cannot write otherwise).
mod inf_as_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        if x.is_finite() {
            s.serialize_f64(*x)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of curve, rebuilt from its spec through JSON, answers every query with the
    /// same bits (and a curve without a spec answers `None`).
    #[test]
    fn a_rebuilt_curve_answers_with_the_same_bits() {
        let steps = StepCurve::new(vec![10.0, 50.0, 300.0], vec![0.9, 0.5, 0.2], Some(1e-3))
            .expect("valid steps");
        let curves: Vec<Arc<dyn ConditionalSurvival>> = vec![
            Arc::new(Exponential::from_rate(2e-4)),
            Arc::new(Exponential::from_rate(0.0)),
            Arc::new(Weibull::new(0.6, 900.0).expect("valid")),
            Arc::new(steps.clone()),
            Arc::new(LinearCurve::new(steps.clone())),
            Arc::new(WeibullTail::new(steps.clone(), 300.0, 0.7, 400.0).expect("valid")),
            Arc::new(
                WeibullTail::new(LinearCurve::new(steps.clone()), 300.0, 1.3, 2e3).expect("ok"),
            ),
        ];
        let mut grid = [[0.0; super::super::GRID_POINTS]; 2];
        for c in &curves {
            let spec = c.spec().expect("every curve here has a spec");
            let json = serde_json::to_string(&spec).expect("serialises");
            let back: CurveSpec = serde_json::from_str(&json).expect("parses");
            assert_eq!(back, spec, "{json}");
            let r = back.build().expect("builds");
            assert_eq!(
                r.tail_hazard().to_bits(),
                c.tail_hazard().to_bits(),
                "{json}"
            );
            for &a in &[0.0, 5.0, 49.0, 299.0, 300.0, 1e4] {
                assert_eq!(
                    r.survival(a).to_bits(),
                    c.survival(a).to_bits(),
                    "{json} S({a})"
                );
                for &t in &[0.5, 30.0, 700.0, 1e5] {
                    let (x, y) = (r.conditional(a, t), c.conditional(a, t));
                    assert_eq!(x.to_bits(), y.to_bits(), "{json}: S({t} | {a})");
                }
                r.conditional_grid(a, 17.0, &mut grid[0]);
                c.conditional_grid(a, 17.0, &mut grid[1]);
                assert_eq!(grid[0], grid[1], "{json}: grid at {a}");
            }
        }
        let fit = crate::survival::km::KmFit::fit(&[1.0, 2.0], &[true, false]).expect("fits");
        assert_eq!(
            fit.spec(),
            None,
            "a fit is not one of the curves a spec describes"
        );
    }

    #[test]
    fn a_spec_that_is_no_curve_is_an_error() {
        let bad = CurveSpec::Steps {
            times: vec![5.0, 1.0],
            values: vec![0.9, 0.8],
            tail_rate_per_s: 0.0,
        };
        assert!(matches!(bad.build(), Err(SpecError::Steps(_))));
        let tail = CurveSpec::WeibullTail {
            inner: Box::new(CurveSpec::Exponential { mean_s: 5.0 }),
            last_t_s: 1.0,
            shape: 1.0,
            scale_s: 1.0,
        };
        assert_eq!(tail.build().err(), Some(SpecError::Inner));
        let w = CurveSpec::Weibull {
            shape: -1.0,
            scale_s: 1.0,
        };
        let err = w.build().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("finite and positive"), "{err}");
    }
}
