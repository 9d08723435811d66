//! `floor`, `ceil` and `round` equal to `f64`'s, without a call into the maths library.
//!
//! On the baseline x86-64 target (no SSE4.1 `roundsd`), `f64::floor`, `ceil` and `round` are
//! out-of-line library calls; the engine and the forecast round every end time and every KV
//! block count, millions of times per run. These versions go through an integer conversion,
//! which is exact for `|x| < 2^52` (where a `f64` can have a fraction), and defer to the
//! library beyond (where every finite `f64` is whole) and for NaN and infinities. They give
//! the library's value for every input, but the sign of a zero result: `floor(-0.5)` is `-1`
//! either way, `ceil(-0.5)` is `-0.0` from the library and `0.0` here (equal under `==`, and
//! the same integer after `as`).

/// `2^52`: from here on every `f64` is a whole number.
const WHOLE: f64 = 4_503_599_627_370_496.0;

/// `x.floor()`.
#[inline]
pub fn floor(x: f64) -> f64 {
    if x.abs() < WHOLE {
        let t = x as i64 as f64;
        if t > x {
            t - 1.0
        } else {
            t
        }
    } else {
        x.floor()
    }
}

/// `x.ceil()` (but the sign of a zero).
#[inline]
pub fn ceil(x: f64) -> f64 {
    if x.abs() < WHOLE {
        let t = x as i64 as f64;
        if t < x {
            t + 1.0
        } else {
            t
        }
    } else {
        x.ceil()
    }
}

/// `x.round()`: half-way cases away from zero (but the sign of a zero).
#[inline]
pub fn round(x: f64) -> f64 {
    if x.abs() < WHOLE {
        let t = x as i64 as f64;
        // Exact: `x` and its integer part share their exponent's range.
        let frac = x - t;
        if frac >= 0.5 {
            t + 1.0
        } else if frac <= -0.5 {
            t - 1.0
        } else {
            t
        }
    } else {
        x.round()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn same(a: f64, b: f64) -> bool {
        a == b || (a.is_nan() && b.is_nan())
    }

    const EDGES: [f64; 22] = [
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.5,
        -1.5,
        2.5,
        -2.5,
        0.499_999_999_999_999_94,
        -0.499_999_999_999_999_94,
        4_503_599_627_370_495.5,
        -4_503_599_627_370_495.5,
        4_503_599_627_370_496.0,
        9_007_199_254_740_993.0,
        1e300,
        -1e300,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1_234_567.000_000_1,
    ];

    #[test]
    fn the_edges_round_as_the_library_does() {
        for x in EDGES {
            assert!(same(floor(x), x.floor()), "floor({x:e})");
            assert!(same(ceil(x), x.ceil()), "ceil({x:e})");
            assert!(same(round(x), x.round()), "round({x:e})");
        }
    }

    proptest! {
        #[test]
        fn any_f64_rounds_as_the_library_does(bits in any::<u64>()) {
            let x = f64::from_bits(bits);
            prop_assert!(same(floor(x), x.floor()));
            prop_assert!(same(ceil(x), x.ceil()));
            prop_assert!(same(round(x), x.round()));
        }

        #[test]
        fn engine_sized_values_round_as_the_library_does(x in -1e13f64..1e13, half in any::<bool>()) {
            // Values near half-way points, as microsecond times are.
            let x = if half { x.trunc() + 0.5 } else { x };
            prop_assert!(same(floor(x), x.floor()));
            prop_assert!(same(ceil(x), x.ceil()));
            prop_assert!(same(round(x), x.round()));
        }
    }
}
