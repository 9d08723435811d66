//! The typed choices a scenario file names as text, parsed (and so checked) when the file is
//! read: how the policies read the survival curves and their tails, the output-length
//! estimator, and the metric the oracle gap is measured on.

use serde::{Deserialize, Serialize};

/// A [`crate::replay::LengthEstimator`] in a scenario file: its text (`exact`, `lognormal:SIGMA`, `bucket`),
/// parsed when the file is read.
pub(super) mod estimator_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::replay::LengthEstimator;

    /// Writes the value as its text.
    pub fn serialize<S: Serializer>(e: &LengthEstimator, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(e)
    }

    /// Reads the value from its text.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<LengthEstimator, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A [`crate::replay::Metric`] in a scenario file: its key (`unplanned_interruptions`, ...),
/// checked when the file is read.
pub(crate) mod metric_key {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::replay::{Metric, METRICS};

    /// Writes the value as its text.
    pub fn serialize<S: Serializer>(m: &Metric, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(m.key())
    }

    /// Reads the value from its text.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Metric, D::Error> {
        let key = String::deserialize(d)?;
        parse(&key).map_err(serde::de::Error::custom)
    }

    /// The metric of `key`, or why there is none (the message lists the keys).
    pub fn parse(key: &str) -> Result<Metric, String> {
        Metric::from_key(key).ok_or_else(|| {
            let keys: Vec<&str> = METRICS.iter().map(|m| m.key).collect();
            format!(
                "must be a metric key, got {key:?}; known: {}",
                keys.join(", ")
            )
        })
    }
}

/// How policies read the fitted survival curves (`policy.survival_curve`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CurveReading {
    /// `step`: the Kaplan-Meier steps as they are.
    Step,
    /// `linear`: each drop spread over the interval before it.
    #[default]
    Linear,
}

/// How the curves are read past their last knot, the oldest nodes (`policy.tail`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TailModel {
    /// `exponential`: the pooled average tail hazard.
    #[default]
    Exponential,
    /// `last-interval`: each node's hazard over its last interval.
    LastInterval,
    /// `flat`: no failures past the last knot.
    Flat,
    /// `weibull`: the pooled Weibull fit's conditional survival.
    Weibull,
}
