//! Numerical building blocks of the estimators, in one place: special functions (erfc, the
//! normal tail, ln Γ, the regularised incomplete gamma function), χ²₁ tail probabilities,
//! Brent's bounded minimisation, Nelder–Mead in a box, and small dense linear algebra
//! (Cholesky inverse, Gaussian elimination, numerical derivatives).
//!
//! References: Brent, R. P. (1973). *Algorithms for Minimization without Derivatives*.
//! Nelder, J. A. & Mead, R. (1965). A simplex method for function minimization. *Comput. J.*
//! 7, 308–313. Press, W. H. et al. (2007). *Numerical Recipes*, 3rd ed., §6.1–6.2 (Lanczos
//! ln Γ, incomplete gamma by series and continued fraction).

/// Complementary error function erfc(x) = 2/√π ∫_x^∞ e^{−s²} ds (relative error ≈ 1e−15).
///
/// |x| < 2: 1 − erf(x) with the all-positive series
/// erf(x) = 2x/√π · e^{−x²} Σ_{n≥0} (2x²)^n / (1·3···(2n+1));
/// x ≥ 2: the continued fraction erfc(x) = e^{−x²}/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …))))
/// evaluated with the modified Lentz algorithm; erfc(−x) = 2 − erfc(x).
pub(crate) fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < 2.0 {
        return 1.0 - erf_series(x);
    }
    if x > 27.5 {
        return 0.0;
    }
    (-x * x).exp() / (std::f64::consts::PI.sqrt() * erfc_cf(x))
}

/// The continued fraction f(x) = x + (1/2)/(x + 1/(x + (3/2)/(x + …))) of erfc for x ≥ 2
/// (modified Lentz): erfc(x) = e^{−x²} / (√π f(x)).
fn erfc_cf(x: f64) -> f64 {
    let tiny = 1e-300;
    let mut f = x;
    let mut c = f;
    let mut d = 0.0;
    for n in 1..2000 {
        let a = n as f64 * 0.5;
        d = x + a * d;
        if d.abs() < tiny {
            d = tiny;
        }
        d = 1.0 / d;
        c = x + a / c;
        if c.abs() < tiny {
            c = tiny;
        }
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    f
}

/// erf(x) for 0 ≤ x < 2 by the positive series (no cancellation).
fn erf_series(x: f64) -> f64 {
    let x2 = x * x;
    let mut term = 1.0;
    let mut sum = 1.0;
    let mut n = 0.0;
    while term > 1e-17 * sum {
        n += 1.0;
        term *= 2.0 * x2 / (2.0 * n + 1.0);
        sum += term;
    }
    2.0 * x / std::f64::consts::PI.sqrt() * (-x2).exp() * sum
}

/// Survival function of χ² with one degree of freedom: P(χ²₁ > x) = erfc(√(x/2)).
pub(crate) fn chi2_1df_sf(x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    erfc((0.5 * x).sqrt())
}

/// ln erfc(x) without underflow: ln(erfc x) for x < 2, −x² − ln(√π f(x)) with the continued
/// fraction f of [`erfc`] for x ≥ 2 (finite for every finite x).
fn ln_erfc(x: f64) -> f64 {
    if x < 2.0 {
        erfc(x).ln()
    } else {
        -x * x - (std::f64::consts::PI.sqrt() * erfc_cf(x)).ln()
    }
}

/// ln Q(z) = ln(1 − Φ(z)) = ln(erfc(z/√2)/2), finite for every finite z.
pub(crate) fn normal_ln_sf(z: f64) -> f64 {
    ln_erfc(z * std::f64::consts::FRAC_1_SQRT_2) - std::f64::consts::LN_2
}

/// ln φ(z) = −z²/2 − ln √(2π).
pub(crate) fn normal_ln_pdf(z: f64) -> f64 {
    -0.5 * z * z - 0.918_938_533_204_672_8
}

/// ln Γ(x) for x > 0 by the Lanczos approximation (g = 7, 9 coefficients; relative error of
/// Γ ≈ 1e−15), with the reflection ln Γ(x) = ln(π / sin πx) − ln Γ(1 − x) for x < ½.
pub(crate) fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const P: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin().abs()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = P[0];
    for (i, &p) in P.iter().enumerate().skip(1) {
        a += p / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.918_938_533_204_672_8 + (x + 0.5) * t.ln() - t + a.ln()
}

/// ln Q(a, x), Q the regularised upper incomplete gamma function
/// Q(a, x) = Γ(a, x)/Γ(a) = 1 − P(a, x), for a > 0, x ≥ 0 (Numerical Recipes §6.2):
///
/// * x < a + 1: P(a, x) = e^{−x} x^a / Γ(a) · Σ_{n≥0} x^n / (a (a+1) ··· (a+n)), ln Q = ln(1 − P);
/// * x ≥ a + 1: Q(a, x) = e^{−x} x^a / Γ(a) · 1/(x + 1 − a − 1·(1−a)/(x + 3 − a − 2·(2−a)/(x + 5 − a − …)))
///   by the modified Lentz algorithm, in logs (no underflow for large x).
///
/// Accuracy: relative error of Q below ~1e−13 for a ∈ [0.02, 50] (limited by ln Γ; tested
/// against Q(1, x) = e^{−x}, Q(½, x) = erfc √x and integer a). NaN for a ≤ 0, NaN or x < 0.
pub(crate) fn gamma_ln_q(a: f64, x: f64) -> f64 {
    if a.is_nan() || a <= 0.0 || x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return 0.0;
    }
    if x.is_infinite() {
        return f64::NEG_INFINITY;
    }
    let ln_pre = -x + a * x.ln() - ln_gamma(a);
    if x < a + 1.0 {
        let mut ap = a;
        let mut del = 1.0 / a;
        let mut sum = del;
        for _ in 0..100_000 {
            ap += 1.0;
            del *= x / ap;
            sum += del;
            if del.abs() < sum.abs() * 1e-17 {
                break;
            }
        }
        let p = (ln_pre + sum.ln()).exp();
        (-p).ln_1p()
    } else {
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..100_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let del = d * c;
            h *= del;
            if (del - 1.0).abs() < 1e-16 {
                break;
            }
        }
        ln_pre + h.ln()
    }
}

/// Q(a, x) = exp([`gamma_ln_q`]).
pub(crate) fn gamma_q(a: f64, x: f64) -> f64 {
    gamma_ln_q(a, x).exp()
}

/// Brent's bounded scalar minimisation (golden section + parabolic interpolation;
/// Brent 1973, as in Forsythe–Malcolm–Moler `fmin` and scipy `fminbound`).
/// Returns (x*, f(x*)). `xatol` is the absolute tolerance on x.
pub(crate) fn minimize_bounded<F: FnMut(f64) -> f64>(
    mut f: F,
    lo: f64,
    hi: f64,
    xatol: f64,
    max_eval: usize,
) -> (f64, f64) {
    let sqrt_eps = f64::EPSILON.sqrt();
    let golden = 0.5 * (3.0 - 5f64.sqrt());
    let (mut a, mut b) = (lo, hi);
    let mut fulc = a + golden * (b - a);
    let mut nfc = fulc;
    let mut xf = fulc;
    let mut rat: f64 = 0.0;
    let mut e: f64 = 0.0;
    let mut fx = f(xf);
    let mut num = 1;
    let mut ffulc = fx;
    let mut fnfc = fx;
    let mut xm = 0.5 * (a + b);
    let mut tol1 = sqrt_eps * xf.abs() + xatol / 3.0;
    let mut tol2 = 2.0 * tol1;
    while (xf - xm).abs() > tol2 - 0.5 * (b - a) {
        let mut golden_step = true;
        if e.abs() > tol1 {
            golden_step = false;
            let mut r = (xf - nfc) * (fx - ffulc);
            let mut q = (xf - fulc) * (fx - fnfc);
            let mut p = (xf - fulc) * q - (xf - nfc) * r;
            q = 2.0 * (q - r);
            if q > 0.0 {
                p = -p;
            }
            q = q.abs();
            r = e;
            e = rat;
            if p.abs() < (0.5 * q * r).abs() && p > q * (a - xf) && p < q * (b - xf) {
                rat = p / q;
                let x = xf + rat;
                if (x - a) < tol2 || (b - x) < tol2 {
                    let si = if xm - xf >= 0.0 { 1.0 } else { -1.0 };
                    rat = tol1 * si;
                }
            } else {
                golden_step = true;
            }
        }
        if golden_step {
            e = if xf >= xm { a - xf } else { b - xf };
            rat = golden * e;
        }
        let si = if rat >= 0.0 { 1.0 } else { -1.0 };
        let x = xf + si * rat.abs().max(tol1);
        let fu = f(x);
        num += 1;
        if fu <= fx {
            if x >= xf {
                a = xf;
            } else {
                b = xf;
            }
            fulc = nfc;
            ffulc = fnfc;
            nfc = xf;
            fnfc = fx;
            xf = x;
            fx = fu;
        } else {
            if x < xf {
                a = x;
            } else {
                b = x;
            }
            if fu <= fnfc || nfc == xf {
                fulc = nfc;
                ffulc = fnfc;
                nfc = x;
                fnfc = fu;
            } else if fu <= ffulc || fulc == xf || fulc == nfc {
                fulc = x;
                ffulc = fu;
            }
        }
        xm = 0.5 * (a + b);
        tol1 = sqrt_eps * xf.abs() + xatol / 3.0;
        tol2 = 2.0 * tol1;
        if num >= max_eval {
            break;
        }
    }
    (xf, fx)
}

/// Inverse of a symmetric positive-definite matrix by Cholesky; `None` if not positive definite.
pub(crate) fn spd_inverse(a: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let n = a.len();
    let mut l = vec![vec![0.0; n]; n];
    for i in 0..n {
        for j in 0..=i {
            let dot: f64 = l[i][..j].iter().zip(&l[j][..j]).map(|(x, y)| x * y).sum();
            let s = a[i][j] - dot;
            if i == j {
                if !(s > 0.0 && s.is_finite()) {
                    return None;
                }
                l[i][i] = s.sqrt();
            } else {
                l[i][j] = s / l[j][j];
            }
        }
    }
    // column c of the inverse solves L Lᵀ x = e_c; the inverse is symmetric, so the columns
    // are also its rows
    let inv = (0..n)
        .map(|c| {
            let mut y = vec![0.0; n];
            for i in 0..n {
                let dot: f64 = l[i][..i].iter().zip(&y[..i]).map(|(x, y)| x * y).sum();
                y[i] = (if i == c { 1.0 } else { 0.0 } - dot) / l[i][i];
            }
            let mut x = vec![0.0; n];
            for i in (0..n).rev() {
                let dot: f64 = (i + 1..n).map(|k| l[k][i] * x[k]).sum();
                x[i] = (y[i] - dot) / l[i][i];
            }
            x
        })
        .collect();
    Some(inv)
}

/// Central-difference gradient and Hessian of f at θ with step h.
pub(crate) fn numeric_derivatives<F: Fn(&[f64]) -> f64>(
    f: &F,
    theta: &[f64],
    h: f64,
) -> (Vec<f64>, Vec<Vec<f64>>) {
    let n = theta.len();
    let f0 = f(theta);
    let mut g = vec![0.0; n];
    let mut hess = vec![vec![0.0; n]; n];
    let mut x = theta.to_vec();
    for i in 0..n {
        x[i] = theta[i] + h;
        let fp = f(&x);
        x[i] = theta[i] - h;
        let fm = f(&x);
        x[i] = theta[i];
        g[i] = (fp - fm) / (2.0 * h);
        hess[i][i] = (fp - 2.0 * f0 + fm) / (h * h);
    }
    for i in 0..n {
        for j in i + 1..n {
            let mut v = 0.0;
            for (si, sj, w) in [
                (1.0, 1.0, 1.0),
                (1.0, -1.0, -1.0),
                (-1.0, 1.0, -1.0),
                (-1.0, -1.0, 1.0),
            ] {
                x[i] = theta[i] + si * h;
                x[j] = theta[j] + sj * h;
                v += w * f(&x);
            }
            x[i] = theta[i];
            x[j] = theta[j];
            let hij = v / (4.0 * h * h);
            hess[i][j] = hij;
            hess[j][i] = hij;
        }
    }
    (g, hess)
}

/// Minimises f by Nelder–Mead (reflection 1, expansion 2, contraction ½, shrink ½) with every
/// vertex clamped into [lo, hi], until the simplex values agree to 1e-9 relative; restarts
/// from the best vertex (fresh simplex of half the step, at most 3 runs) until a restart
/// improves by less than 1e-8 relative. Returns (θ*, f(θ*)).
pub(crate) fn nelder_mead<F: Fn(&[f64]) -> f64>(
    f: &F,
    start: &[f64],
    step: f64,
    lo: &[f64],
    hi: &[f64],
    max_eval: usize,
) -> (Vec<f64>, f64) {
    let n = start.len();
    let clamp = |x: &mut Vec<f64>| {
        for i in 0..n {
            x[i] = x[i].clamp(lo[i], hi[i]);
        }
    };
    let eval = |x: &[f64]| {
        let v = f(x);
        if v.is_nan() {
            f64::INFINITY
        } else {
            v
        }
    };
    let mut best: Vec<f64> = start.to_vec();
    clamp(&mut best);
    let mut fbest = eval(&best);
    let mut evals = 1;
    let mut step = step;
    for _restart in 0..3 {
        let mut simplex: Vec<(Vec<f64>, f64)> = Vec::with_capacity(n + 1);
        simplex.push((best.clone(), fbest));
        for i in 0..n {
            let mut x = best.clone();
            x[i] += if x[i] + step <= hi[i] { step } else { -step };
            clamp(&mut x);
            let fx = eval(&x);
            evals += 1;
            simplex.push((x, fx));
        }
        let mut iter_evals = 0;
        loop {
            simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
            let (f_lo, f_hi) = (simplex[0].1, simplex[n].1);
            let size = (1..=n)
                .map(|k| {
                    simplex[k]
                        .0
                        .iter()
                        .zip(&simplex[0].0)
                        .map(|(a, b)| (a - b).abs())
                        .fold(0.0, f64::max)
                })
                .fold(0.0, f64::max);
            if (f_hi - f_lo).abs() <= 1e-9 * (1.0 + f_lo.abs())
                || size < 1e-8
                || evals + iter_evals >= max_eval
            {
                break;
            }
            let mut centroid = vec![0.0; n];
            for (x, _) in &simplex[..n] {
                for i in 0..n {
                    centroid[i] += x[i] / n as f64;
                }
            }
            let point = |t: f64| -> Vec<f64> {
                let mut p: Vec<f64> = (0..n)
                    .map(|i| centroid[i] + t * (simplex[n].0[i] - centroid[i]))
                    .collect();
                clamp(&mut p);
                p
            };
            let xr = point(-1.0);
            let fr = eval(&xr);
            iter_evals += 1;
            if fr < simplex[0].1 {
                let xe = point(-2.0);
                let fe = eval(&xe);
                iter_evals += 1;
                simplex[n] = if fe < fr { (xe, fe) } else { (xr, fr) };
            } else if fr < simplex[n - 1].1 {
                simplex[n] = (xr, fr);
            } else {
                let (xc, fc) = if fr < simplex[n].1 {
                    let xc = point(-0.5);
                    let fc = eval(&xc);
                    (xc, fc)
                } else {
                    let xc = point(0.5);
                    let fc = eval(&xc);
                    (xc, fc)
                };
                iter_evals += 1;
                if fc < simplex[n].1.min(fr) {
                    simplex[n] = (xc, fc);
                } else {
                    let x0 = simplex[0].0.clone();
                    for v in simplex.iter_mut().skip(1) {
                        let mut p: Vec<f64> =
                            (0..n).map(|i| x0[i] + 0.5 * (v.0[i] - x0[i])).collect();
                        clamp(&mut p);
                        v.1 = eval(&p);
                        v.0 = p;
                        iter_evals += 1;
                    }
                }
            }
        }
        evals += iter_evals;
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        let improved = fbest - simplex[0].1;
        if simplex[0].1 <= fbest {
            best = simplex[0].0.clone();
            fbest = simplex[0].1;
        }
        if improved <= 1e-8 * (1.0 + fbest.abs()) || evals >= max_eval {
            break;
        }
        step = (step * 0.5).max(1e-3);
    }
    (best, fbest)
}

/// Solves `a x = b` by Gaussian elimination with partial pivoting; `None` when `a` is
/// singular (a pivot below `1e-12` of the largest entry).
pub(crate) fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let m = b.len();
    let scale = a
        .iter()
        .flatten()
        .fold(0.0f64, |s, x| s.max(x.abs()))
        .max(f64::MIN_POSITIVE);
    for col in 0..m {
        let piv = (col..m).max_by(|&r, &s| a[r][col].abs().total_cmp(&a[s][col].abs()))?;
        // A NaN pivot is singular too.
        if a[piv][col].abs().partial_cmp(&(1e-12 * scale)) != Some(std::cmp::Ordering::Greater) {
            return None;
        }
        a.swap(col, piv);
        b.swap(col, piv);
        let (upper, lower) = a.split_at_mut(col + 1);
        let pivot_row = &upper[col];
        for (k, row) in lower.iter_mut().enumerate() {
            let f = row[col] / pivot_row[col];
            for (x, p) in row[col..].iter_mut().zip(&pivot_row[col..]) {
                *x -= f * p;
            }
            b[col + 1 + k] -= f * b[col];
        }
    }
    let mut x = vec![0.0; m];
    for r in (0..m).rev() {
        let s: f64 = (r + 1..m).map(|c| a[r][c] * x[c]).sum();
        x[r] = (b[r] - s) / a[r][r];
    }
    Some(x)
}

#[cfg(test)]
#[path = "numeric_tests.rs"]
mod tests;
