//! Sample LLM request workloads: Gamma inter-arrival times with a chosen rate and coefficient of
//! variation, log-normal prompt and output lengths, written as a `lengths-csv` file
//! (`arrival_s,prompt_tokens,output_tokens`).
//!
//! Defaults measured on the Azure LLM inference trace 2023, `conv` (19,366 requests over
//! 3,502 s): 5.53 requests/s with inter-arrival CV 1.09; ln(prompt tokens) mean 6.633, sd 0.985;
//! ln(output tokens) mean 5.019, sd 0.859 (outputs capped at 1,000 in the trace).

use std::fmt::Write as _;

use crate::rng::Rng;

/// Parameters of a synthetic workload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorkloadParams {
    /// Mean arrival rate, requests/s.
    pub rate: f64,
    /// Coefficient of variation of inter-arrival times (1 = Poisson).
    pub cv: f64,
    /// Length of the workload, seconds.
    pub duration_s: f64,
    /// Mean of ln(prompt tokens).
    pub prompt_mu: f64,
    /// Standard deviation of ln(prompt tokens).
    pub prompt_sigma: f64,
    /// Mean of ln(output tokens).
    pub output_mu: f64,
    /// Standard deviation of ln(output tokens).
    pub output_sigma: f64,
    /// Largest prompt, tokens.
    pub max_prompt: u32,
    /// Largest output, tokens.
    pub max_output: u32,
}

impl Default for WorkloadParams {
    /// Azure conv 2023 shape, one hour at 0.5 requests/s.
    fn default() -> Self {
        WorkloadParams {
            rate: 0.5,
            cv: 1.09,
            duration_s: 3600.0,
            prompt_mu: 6.633,
            prompt_sigma: 0.985,
            output_mu: 5.019,
            output_sigma: 0.859,
            max_prompt: 16_384,
            max_output: 1_000,
        }
    }
}

/// The long-output (reasoning / agentic) request class: log-normal outputs with median
/// e^8.13 ≈ 3,400 tokens and sigma 0.8, so the mean is 3,400 · e^0.32 ≈ 4,700 tokens, the mean
/// output of DeepSeek-R1 measured in "Token-Hungry, Yet Precise" (arXiv 2501.18576: 4,717.5
/// tokens on average), capped at 32,768; prompts as Azure conv.
pub const LONG_OUTPUT: WorkloadParams = WorkloadParams {
    rate: 0.5,
    cv: 1.09,
    duration_s: 3600.0,
    prompt_mu: 6.633,
    prompt_sigma: 0.985,
    output_mu: 8.13,
    output_sigma: 0.8,
    max_prompt: 16_384,
    max_output: 32_768,
};

/// How many lengths a generated workload clipped at its caps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Clipped {
    /// Requests.
    pub requests: usize,
    /// Prompts drawn above `max_prompt` (written as `max_prompt`).
    pub prompts: usize,
    /// Outputs drawn above `max_output` (written as `max_output`).
    pub outputs: usize,
}

/// Generates the CSV text of a workload.
pub fn workload_csv(p: &WorkloadParams, seed: u64) -> String {
    workload_csv_counted(p, seed).0
}

/// [`workload_csv`] with the number of lengths clipped at the caps.
pub fn workload_csv_counted(p: &WorkloadParams, seed: u64) -> (String, Clipped) {
    let mut clipped = Clipped::default();
    let mut rng = Rng::stream(seed, 400);
    let shape = 1.0 / (p.cv * p.cv).max(1e-6);
    let scale = 1.0 / (p.rate * shape);
    let mut out = String::from("arrival_s,prompt_tokens,output_tokens\n");
    let mut t = 0.0;
    loop {
        t += rng.gamma(shape, scale);
        if t >= p.duration_s {
            break;
        }
        let prompt = rng.lognormal(p.prompt_mu, p.prompt_sigma).round();
        let output = rng.lognormal(p.output_mu, p.output_sigma).round();
        clipped.requests += 1;
        clipped.prompts += usize::from(prompt > f64::from(p.max_prompt));
        clipped.outputs += usize::from(output > f64::from(p.max_output));
        let prompt = prompt.clamp(1.0, f64::from(p.max_prompt)) as u32;
        let output = output.clamp(1.0, f64::from(p.max_output)) as u32;
        let _ = writeln!(out, "{t:.3},{prompt},{output}");
    }
    (out, clipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_and_lengths_are_as_asked() {
        let p = WorkloadParams {
            rate: 5.0,
            duration_s: 2000.0,
            ..WorkloadParams::default()
        };
        let csv = workload_csv(&p, 1);
        let rows: Vec<Vec<f64>> = csv
            .lines()
            .skip(1)
            .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
            .collect();
        let rate = rows.len() as f64 / 2000.0;
        assert!((rate - 5.0).abs() < 0.3, "rate {rate}");
        let gaps: Vec<f64> = rows.windows(2).map(|w| w[1][0] - w[0][0]).collect();
        let m = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let sd = (gaps.iter().map(|g| (g - m).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
        assert!((sd / m - 1.09).abs() < 0.1, "cv {}", sd / m);
        let lp = rows.iter().map(|r| r[1].ln()).sum::<f64>() / rows.len() as f64;
        assert!((lp - 6.633).abs() < 0.1, "ln prompt mean {lp}");
        assert!(rows.iter().all(|r| r[2] >= 1.0 && r[2] <= 1000.0));
        assert_eq!(csv, workload_csv(&p, 1));
    }
}
