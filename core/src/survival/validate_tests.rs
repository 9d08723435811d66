//! Unit tests of `validate.rs` (kept in their own file so the module reads as one idea).

use super::*;

fn res(v: &[(f64, bool)]) -> Vec<Residual> {
    v.iter()
        .map(|&(time, event)| Residual { time, event })
        .collect()
}

#[test]
fn concordance_perfect_reversed_and_ties() {
    let r = res(&[
        (1.0, true),
        (2.0, false),
        (3.0, true),
        (4.0, true),
        (5.0, false),
        (3.0, false),
    ]);
    // at the tie (3, event) vs (3, censored) the event must rank as riskier
    let bump = |x: &Residual| if x.event { 0.5 } else { 0.0 };
    let perfect: Vec<f64> = r.iter().map(|x| -x.time + bump(x)).collect();
    let reversed: Vec<f64> = r.iter().map(|x| x.time - bump(x)).collect();
    assert_eq!(concordance_index(&r, &perfect).unwrap(), Some(1.0));
    assert_eq!(concordance_index(&r, &reversed).unwrap(), Some(0.0));
    assert_eq!(concordance_index(&r, &[7.0; 6]).unwrap(), Some(0.5));
    // brute force on a mixed score
    let score = [0.3, 0.1, 0.3, 0.9, 0.2, 0.3];
    let (mut num, mut den) = (0.0, 0.0);
    for i in 0..r.len() {
        for j in 0..r.len() {
            let comp =
                r[i].event && (r[i].time < r[j].time || (r[i].time == r[j].time && !r[j].event));
            if comp {
                den += 1.0;
                if score[i] > score[j] {
                    num += 1.0;
                } else if score[i] == score[j] {
                    num += 0.5;
                }
            }
        }
    }
    let c = concordance_index(&r, &score).unwrap().unwrap();
    assert!((c - num / den).abs() < 1e-15, "{c} vs {}", num / den);
    assert_eq!(
        concordance_index(&res(&[(1.0, false)]), &[0.0]).unwrap(),
        None
    );
}

#[test]
fn brier_of_perfect_predictor_is_zero() {
    let r = res(&[
        (1.0, true),
        (2.5, false),
        (3.0, true),
        (4.0, true),
        (6.0, false),
    ]);
    let grid = brier_grid(5.0, 50);
    let bs = brier_scores(&r, &grid, |j, k| (grid[k] < r[j].time) as u8 as f64).unwrap();
    assert!(bs.iter().all(|&b| b == 0.0));
    assert_eq!(integrated_brier_score(&grid, &bs), Some(0.0));
    // the constant 1/2 prediction: BS = 1/4 · (weights sum to n in expectation)
    let half = brier_scores(&r, &grid, |_, _| 0.5).unwrap();
    assert!((half[0] - 0.25).abs() < 1e-15);
}

#[test]
fn censoring_km_and_horizon() {
    // administrative censoring at 10: Ĝ = 1 before 10, 0 at 10
    let r = res(&[(1.0, true), (2.0, true), (10.0, false), (10.0, false)]);
    let g = CensoringKm::fit(&r).unwrap();
    assert_eq!(g.at(9.0), 1.0);
    assert_eq!(g.at(10.0), 0.0);
    assert_eq!(g.before(10.0), 1.0);
    assert_eq!(g.zero_time(), Some(10.0));
    assert_eq!(ibs_horizon(&r, 0.9).unwrap(), Some(2.0));
    assert_eq!(empirical_quantile(&[3.0, 1.0, 2.0, 4.0], 0.5), Some(2.0));
    assert_eq!(empirical_quantile(&[3.0, 1.0, 2.0, 4.0], 0.9), Some(4.0));
}

#[test]
fn split_rules() {
    let s = [
        SurvivalSession::new(0, 0.0, 5.0, true),
        SurvivalSession::new(0, 6.0, 20.0, true),
        SurvivalSession::new(1, 2.0, 30.0, false).with_entry(3.0),
        SurvivalSession::new(1, 12.0, 15.0, true),
    ];
    let sets = split_at(&s, 10.0).unwrap();
    assert_eq!(sets.train.durations, vec![5.0, 4.0, 11.0]);
    assert_eq!(sets.train.events, vec![true, false, false]);
    assert_eq!(sets.train.entry, vec![0.0, 0.0, 3.0]);
    assert_eq!(sets.test.len(), 2);
    assert_eq!(sets.test[1].age, 11.0);
    assert_eq!(
        sets.test[1].residual,
        Residual {
            time: 20.0,
            event: false
        }
    );
    assert_eq!(split_time_from_fraction(&s, 0.5).unwrap(), 15.0);
    assert!(split_time_from_fraction(&s, 1.0).is_err());
    assert!(split_at(&[SurvivalSession::new(0, 3.0, 2.0, true)], 1.0).is_err());
}
