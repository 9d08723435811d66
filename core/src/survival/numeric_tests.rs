//! Tests of the numerical building blocks (reference values from Python's `math` and
//! closed forms).

use super::*;

fn rel(a: f64, b: f64) -> f64 {
    ((a - b) / b).abs()
}

#[test]
fn brent_finds_parabola_minimum() {
    let (x, fx) = minimize_bounded(|x| (x - 1.234).powi(2) + 3.0, -10.0, 10.0, 1e-10, 500);
    assert!((x - 1.234).abs() < 1e-8, "{x}");
    assert!((fx - 3.0).abs() < 1e-12);
}

#[test]
fn brent_respects_bounds() {
    let (x, _) = minimize_bounded(|x| x, 2.0, 5.0, 1e-8, 500);
    assert!((2.0..2.0 + 1e-6).contains(&x), "{x}");
}

#[test]
fn erfc_and_normal_tail() {
    // reference: Python math.erfc
    for (x, want) in [
        (0.0, 1.0),
        (0.5, 0.4795001221869535),
        (1.5, 0.033894853524689274),
        (2.5, 0.0004069520174449589),
        (5.0, 1.5374597944280351e-12),
        (10.0, 2.088487583762545e-45),
        (-1.0, 1.842700792949715),
    ] {
        assert!((erfc(x) - want).abs() <= 1e-14 * want, "erfc({x})");
        assert!((ln_erfc(x) - want.ln()).abs() <= 1e-13, "ln_erfc({x})");
    }
    // far tail: ln Q(z) ~ −z²/2 − ln(z √(2π)) (1 − 1/z² + …)
    let z: f64 = 60.0;
    let asym = -0.5 * z * z - (z * (2.0 * std::f64::consts::PI).sqrt()).ln()
        + (1.0 - 1.0 / (z * z) + 3.0 / z.powi(4)).ln();
    assert!((normal_ln_sf(z) - asym).abs() < 1e-8);
    assert!((normal_ln_sf(0.0) - 0.5f64.ln()).abs() < 1e-15);
    assert!(normal_ln_sf(-40.0).abs() < 1e-300);
}
#[test]
fn ln_gamma_reference_values() {
    let sqrt_pi = std::f64::consts::PI.sqrt();
    assert!((ln_gamma(0.5) - sqrt_pi.ln()).abs() < 1e-14);
    assert!((ln_gamma(1.0)).abs() < 1e-14);
    let mut fact: f64 = 1.0;
    for n in 1..30 {
        // Γ(n + 1) = n!
        fact *= n as f64;
        let want = fact.ln();
        assert!(
            (ln_gamma(n as f64 + 1.0) - want).abs() <= 1e-14 * want.max(1.0),
            "n = {n}"
        );
    }
    // Γ(0.02) = 49.442210163...: Γ(x) = Γ(x + 1)/x
    assert!(rel(ln_gamma(0.02), (ln_gamma(1.02).exp() / 0.02).ln()) < 1e-13);
}
#[test]
fn incomplete_gamma_identities() {
    for &x in &[1e-6, 0.01, 0.3, 1.0, 2.5, 7.0, 30.0, 200.0, 700.0] {
        // Q(1, x) = e^{−x}
        assert!(
            (gamma_ln_q(1.0, x) + x).abs() <= 1e-13 * x.max(1.0),
            "a = 1, x = {x}"
        );
        // Q(½, x) = erfc(√x)
        let want = ln_erfc(x.sqrt());
        assert!(
            (gamma_ln_q(0.5, x) - want).abs() <= 1e-12 * want.abs().max(1.0),
            "a = ½, x = {x}"
        );
        // Q(3, x) = e^{−x} (1 + x + x²/2)
        let want = -x + (1.0 + x + 0.5 * x * x).ln();
        assert!(
            (gamma_ln_q(3.0, x) - want).abs() <= 1e-12 * want.abs().max(1e-3),
            "a = 3, x = {x}"
        );
        // Q(40, x) = e^{−x} Σ_{k<40} x^k/k!
        let (mut term, mut sum) = (1.0f64, 1.0f64);
        for k in 1..40 {
            term *= x / k as f64;
            sum += term;
        }
        let want = -x + sum.ln();
        let got = gamma_ln_q(40.0, x);
        assert!(
            (got - want).abs() <= 1e-11 * want.abs().max(1e-9) + 1e-15,
            "a = 40, x = {x}: {got} {want}"
        );
    }
    assert_eq!(gamma_ln_q(2.0, 0.0), 0.0);
    assert!(gamma_ln_q(0.0, 1.0).is_nan() && gamma_ln_q(1.0, -1.0).is_nan());
    assert!((gamma_q(1.0, 2.0) - (-2.0f64).exp()).abs() < 1e-15);
}
