//! Synthetic inputs for tests, benchmarks and quick experiments: Weibull up/down node
//! timelines and a Poisson workload with log-normal lengths, all from [`crate::rng`] (portable
//! and seeded).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::rng::Rng;
use crate::survival::curve::Weibull;

use super::input::{Cluster, Node, NodeSpec, Request, UpSession, Workload, US_PER_S};

/// A cluster of nodes with Weibull up-sessions and Weibull gaps.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SyntheticCluster {
    /// Number of nodes.
    pub nodes: usize,
    /// Weibull shape of up-sessions (`< 1`: decreasing hazard).
    pub up_shape: f64,
    /// Weibull scale of up-sessions, seconds.
    pub up_scale_s: f64,
    /// Weibull shape of gaps.
    pub down_shape: f64,
    /// Weibull scale of gaps, seconds.
    pub down_scale_s: f64,
    /// The timelines cover `[from_us, to_us)` (trace clock).
    pub from_us: i64,
    /// End of the covered span, us.
    pub to_us: i64,
    /// Slots per node.
    pub slots: u32,
    /// Seed.
    pub seed: u64,
}

impl Default for SyntheticCluster {
    /// 100 nodes, sessions Weibull(0.7, 4 h), gaps Weibull(1, 20 min), over one day, 8 slots.
    fn default() -> SyntheticCluster {
        SyntheticCluster {
            nodes: 100,
            up_shape: 0.7,
            up_scale_s: 4.0 * 3600.0,
            down_shape: 1.0,
            down_scale_s: 1200.0,
            from_us: 0,
            to_us: 86_400_000_000,
            slots: 8,
            seed: 1,
        }
    }
}

impl SyntheticCluster {
    /// Builds the cluster. Node `i` has prefill `1000 + 500 (i mod 5)` tok/s, decode
    /// `20 + 5 (i mod 4)` tok/s, 200,000 KV tokens and 10 Gbit/s; its timeline starts with an
    /// up-session that began a uniform fraction of a scale before `from_us`, then alternates
    /// Weibull gaps and sessions until `to_us` (the last session is open-ended). Its curve is
    /// the generating Weibull; its exponential rate is the maximum-likelihood
    /// `completed sessions / total up time` of its own timeline.
    pub fn build(&self) -> Cluster {
        let mut nodes = Vec::with_capacity(self.nodes);
        for i in 0..self.nodes {
            let mut rng = Rng::stream(self.seed, i as u64);
            let mut t = self.from_us - (rng.uniform() * self.up_scale_s * US_PER_S) as i64;
            let mut sessions = Vec::new();
            let mut exposure = 0.0;
            let mut failures = 0u64;
            loop {
                let up = (rng.weibull(self.up_shape, self.up_scale_s) * US_PER_S).max(1.0) as i64;
                let end = t.saturating_add(up);
                if end >= self.to_us {
                    sessions.push(UpSession::new(t, UpSession::OPEN_END));
                    exposure += (self.to_us - t) as f64 / US_PER_S;
                    break;
                }
                sessions.push(UpSession::new(t, end));
                exposure += up as f64 / US_PER_S;
                failures += 1;
                let down =
                    (rng.weibull(self.down_shape, self.down_scale_s) * US_PER_S).max(1.0) as i64;
                t = end.saturating_add(down);
                if t >= self.to_us {
                    break;
                }
            }
            nodes.push(Node {
                name: format!("node-{i:03}"),
                spec: NodeSpec {
                    slots: self.slots,
                    kv_capacity_tokens: 200_000,
                    prefill_tok_s: 1000.0 + 500.0 * (i % 5) as f64,
                    decode_tok_s: 20.0 + 5.0 * (i % 4) as f64,
                    bandwidth_bytes_s: 1.25e9,
                    step: Default::default(),
                },
                sessions,
                survival: Arc::new(Weibull {
                    shape: self.up_shape,
                    scale: self.up_scale_s,
                }),
                truth: Some(Arc::new(Weibull {
                    shape: self.up_shape,
                    scale: self.up_scale_s,
                })),
                exp_rate_per_s: if exposure > 0.0 {
                    failures as f64 / exposure
                } else {
                    0.0
                },
            });
        }
        Cluster::new(nodes)
    }
}

/// A Poisson workload with log-normal prompt and output lengths.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PoissonWorkload {
    /// Arrivals per second.
    pub rate_per_s: f64,
    /// Arrivals cover `[0, length_s)` seconds after the window start.
    pub length_s: f64,
    /// Median prompt length, tokens.
    pub prompt_median: f64,
    /// Log-sd of the prompt length.
    pub prompt_sigma: f64,
    /// Median output length, tokens.
    pub output_median: f64,
    /// Log-sd of the output length.
    pub output_sigma: f64,
    /// Seed.
    pub seed: u64,
}

impl Default for PoissonWorkload {
    /// 50 requests/s for 10 minutes; prompts median 512 (sigma 0.8), outputs median 128
    /// (sigma 0.6).
    fn default() -> PoissonWorkload {
        PoissonWorkload {
            rate_per_s: 50.0,
            length_s: 600.0,
            prompt_median: 512.0,
            prompt_sigma: 0.8,
            output_median: 128.0,
            output_sigma: 0.6,
            seed: 1,
        }
    }
}

impl PoissonWorkload {
    /// Builds the workload: exponential inter-arrival times with mean `1 / rate_per_s`,
    /// lengths `round(median * exp(sigma Z))`, at least 1 token.
    pub fn build(&self) -> Workload {
        let mut rng = Rng::new(self.seed);
        let mut requests = Vec::new();
        if !(self.rate_per_s > 0.0) {
            return Workload::new(requests);
        }
        let mean_gap = 1.0 / self.rate_per_s;
        let mut t = rng.exponential(mean_gap);
        while t < self.length_s {
            let prompt = rng.lognormal(self.prompt_median.max(1.0).ln(), self.prompt_sigma);
            let output = rng.lognormal(self.output_median.max(1.0).ln(), self.output_sigma);
            requests.push(Request {
                id: requests.len() as u64,
                arrival_us: (t * US_PER_S) as i64,
                prompt_tokens: prompt.round().clamp(1.0, 1e9) as u64,
                output_tokens: output.round().clamp(1.0, 1e9) as u64,
            });
            t += rng.exponential(mean_gap);
        }
        Workload::new(requests)
    }
}
