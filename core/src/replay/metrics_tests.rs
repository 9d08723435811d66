//! Tests of [`super`]: percentiles, bootstrap intervals, metric keys, calibration and scored spans.

use super::*;

#[test]
fn percentiles_interpolate() {
    let xs = [1.0, 2.0, 3.0, 4.0];
    assert_eq!(percentile_sorted(&xs, 0.5), Some(2.5));
    assert_eq!(percentile_sorted(&xs, 0.0), Some(1.0));
    assert_eq!(percentile_sorted(&xs, 1.0), Some(4.0));
    assert_eq!(percentile_sorted(&[], 0.5), None);
}

#[test]
fn bootstrap_is_seeded_and_brackets_the_mean() {
    let xs = [1.0, 2.0, 3.0, 10.0];
    let a = bootstrap_mean_ci(&xs, 1000, 7);
    assert_eq!(a, bootstrap_mean_ci(&xs, 1000, 7));
    let [lo, hi] = a.unwrap_or([f64::NAN; 2]);
    assert!(lo <= 4.0 && 4.0 <= hi, "{lo} {hi}");
    assert_eq!(bootstrap_mean_ci(&[1.0], 1000, 7), None);
}

#[test]
fn metric_keys_are_unique_and_ordered() {
    for (i, m) in Metric::ALL.iter().enumerate() {
        assert_eq!(*m as usize, i);
        assert_eq!(Metric::from_key(m.key()), Some(*m));
    }
    let mut keys: Vec<&str> = METRICS.iter().map(|d| d.key).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), N_METRICS);
}

#[test]
fn ratio_ci_skips_zero_denominators() {
    let ci = bootstrap_ratio_ci(&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0], 200, 3);
    assert_eq!(ci, Some([0.5, 0.5]));
    assert_eq!(bootstrap_ratio_ci(&[1.0, 1.0], &[0.0, 0.0], 50, 3), None);
}

fn record(arrival: f64, completion: Option<f64>) -> RequestRecord {
    RequestRecord {
        request: 0,
        id: 0,
        copy: 0,
        arrival_s: arrival,
        prompt_tokens: 10,
        output_tokens: 10,
        est_output_tokens: 10,
        first_node: None,
        final_node: None,
        nodes_visited: 1,
        ttft_s: completion,
        completion_s: completion,
        generated_tokens: 10,
        recomputed_unplanned_tokens: 0,
        recomputed_planned_tokens: 0,
        kv_bytes_moved: 0.0,
        interruptions: 0,
        kv_preemptions: 0,
        planned_migrations: 0,
        recovery_s: 0.0,
        interruption_causes: Vec::new(),
        slo_deadline_s: 1.0,
        slo_met: completion.is_some(),
        dropped: completion.is_none().then_some(DropReason::WindowEnd),
        forecast_t_s: None,
        forecast_p_interrupt: None,
        served_s: None,
        first_placement_lost: None,
        prefix_hit_tokens: 0,
    }
}

#[test]
fn calibration_scores_observed_requests_only() {
    let mut a = record(0.0, Some(4.0));
    a.forecast_t_s = Some(5.0);
    a.served_s = Some(4.0);
    a.forecast_p_interrupt = Some(0.25);
    a.first_placement_lost = Some(false);
    let mut b = record(0.0, None);
    b.forecast_t_s = Some(3.0);
    b.forecast_p_interrupt = Some(0.95);
    b.first_placement_lost = Some(true);
    // Censored: neither scored.
    let mut c = record(0.0, None);
    c.forecast_t_s = Some(3.0);
    c.forecast_p_interrupt = Some(0.5);
    let cal = Calibration::from_records(&[a, b, c]);
    assert_eq!(cal.t_n(), 1);
    assert_eq!(cal.t_ratio_median(), Some(1.25));
    assert_eq!(cal.t_mape(), Some(0.25));
    assert_eq!(cal.p_n, 2);
    let brier = (0.25f64.powi(2) + 0.05f64.powi(2)) / 2.0;
    assert!((cal.interruption_brier().unwrap() - brier).abs() < 1e-12);
    assert_eq!(cal.bins[2].n, 1);
    assert_eq!(cal.bins[9].lost, 1);
    assert_eq!(cal.interruption_rate(), Some(0.5));
    let mut m = cal.clone();
    m.merge(&cal);
    assert_eq!(m.p_n, 4);
    assert_eq!(m.t_ratio_median(), Some(1.25));
}

#[test]
fn warmup_and_drain_arrivals_are_not_scored() {
    // Arrivals at 1 s (warm-up), 20 s and 50 s (scored) and 95 s (drain) of a 100-s window.
    let recs = [
        record(1.0, Some(9.0)),
        record(20.0, Some(3.0)),
        record(50.0, None),
        record(95.0, None),
    ];
    let s = RunSummary::scored(&recs, 100.0, [10.0, 90.0]);
    assert_eq!(s.requests, 2);
    // 3 s and the restricted 50 s of the unfinished one.
    assert_eq!(s.get(Metric::MeanCompletion), Some(26.5));
    assert_eq!(s.get(Metric::Unfinished), Some(1.0));
    // One SLO-met request of 10 tokens over the 80-s scored span.
    let g = s.get(Metric::SloGoodput).unwrap_or(f64::NAN);
    assert!((g - 10.0 / 80.0).abs() < 1e-12, "{g}");
    // The whole window is the plain summary.
    assert_eq!(
        RunSummary::scored(&recs, 100.0, [0.0, 100.0]),
        RunSummary::from_records(&recs, 100.0)
    );
}

#[test]
fn unfinished_requests_are_censored_at_the_window_end_not_dropped() {
    // Two requests: one done in 2 s, one arriving at 90 s of a 100-s window and never done.
    let recs = [record(0.0, Some(2.0)), record(90.0, None)];
    let s = RunSummary::from_records(&recs, 100.0);
    assert_eq!(s.get(Metric::MeanCompletion), Some(6.0));
    assert_eq!(s.get(Metric::Unfinished), Some(1.0));
    // Dropping the unfinished request would have given a mean of 2 s.
    let fast = RunSummary::from_records(&recs[..1], 100.0);
    assert!(fast.get(Metric::MeanCompletion) < s.get(Metric::MeanCompletion));
}
