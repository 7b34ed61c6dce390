//! Special functions in float64 (float32 callers round the result once): erfinv, digamma,
//! polygamma, the modified Bessel functions i0/i1 and mvlgamma's sum. Values at the edges
//! (poles, ±inf, NaN) are torch's, which are not always the mathematical limits: digamma is NaN
//! at negative integers and -inf, polygamma(n >= 2) is NaN at +inf, i0 and i1 are NaN at ±inf.

use std::f64::consts::PI;

/// erf⁻¹(x): Winitzki's closed-form estimate, then Halley steps on erf(y) = x (on erfc in the
/// tails, where 1 - |x| is exact and erf has no digits left).
pub fn erfinv(x: f64) -> f64 {
    if x.is_nan() || x.abs() > 1.0 {
        return f64::NAN;
    }
    if x.abs() == 1.0 {
        return f64::INFINITY.copysign(x);
    }
    if x == 0.0 {
        return x; // keeps the sign of zero
    }
    let a = x.abs();
    // ln(1 - x²), accurate near |x| = 1
    let l = (-a).ln_1p() + a.ln_1p();
    const W: f64 = 0.147;
    let t = 2.0 / (PI * W) + 0.5 * l;
    let mut y = ((t * t - l / W).sqrt() - t).sqrt();
    let tail = a > 0.5;
    let q = 1.0 - a; // exact for a > 0.5
    for _ in 0..4 {
        // f = erf(y) - a (as q - erfc(y) in the tails); f' = 2/√π e^{-y²}; f''/f' = -2y
        let f = if tail { q - libm::erfc(y) } else { libm::erf(y) - a };
        let d = std::f64::consts::FRAC_2_SQRT_PI * (-y * y).exp();
        if d == 0.0 || f == 0.0 {
            break;
        }
        let step = f / (d + y * f);
        y -= step;
        if step.abs() <= y.abs() * 1e-17 {
            break;
        }
    }
    y.copysign(x)
}

/// ψ(x), the digamma function: recurrence up to x >= 10, then the asymptotic series;
/// reflection below 0. ψ(±0) = ∓inf and NaN at negative integers, as torch's.
pub fn digamma(x: f64) -> f64 {
    if x == 0.0 {
        return f64::INFINITY.copysign(-x);
    }
    if x.is_nan() {
        return x;
    }
    if x < 0.0 {
        if x == x.trunc() {
            return f64::NAN; // the poles, and -inf
        }
        // ψ(x) = ψ(1 - x) - π / tan(π x), with x reduced to its fractional part for the tangent
        let r = x - x.trunc();
        return digamma(1.0 - x) - PI / (PI * r).tan();
    }
    let (mut x, mut acc) = (x, 0.0);
    while x < 10.0 {
        acc -= 1.0 / x;
        x += 1.0;
    }
    if x == f64::INFINITY {
        return x;
    }
    // ln x - 1/(2x) - Σ B_2k / (2k x^2k)
    const C: [f64; 8] = [1.0 / 12.0, -1.0 / 120.0, 1.0 / 252.0, -1.0 / 240.0, 1.0 / 132.0, -691.0 / 32760.0, 1.0 / 12.0, -3617.0 / 8160.0];
    let z = 1.0 / (x * x);
    let mut s = 0.0;
    for &ck in C.iter().rev() {
        s = s * z + ck;
    }
    acc + x.ln() - 0.5 / x - s * z
}

/// B_2k / (2k)! for k = 1..=10 (Euler–Maclaurin coefficients).
const B2K_OVER_FACT: [f64; 10] = [
    1.0 / 12.0,
    -1.0 / 720.0,
    1.0 / 30240.0,
    -1.0 / 1209600.0,
    1.0 / 47900160.0,
    -691.0 / 1307674368000.0,
    1.0 / 74724249600.0,
    -3617.0 / 10670622842880000.0,
    43867.0 / 5109094217170944000.0,
    -174611.0 / 802857662698291200000.0,
];

/// ζ(s, a) = Σ_{k>=0} (a + k)^-s for a >= 0.5 and integer s >= 2: the first terms summed up to
/// a large enough base, the rest by Euler–Maclaurin.
fn hurwitz_pos(s: u32, a: f64) -> f64 {
    let sf = s as f64;
    let base = 12.0 + sf;
    let (mut a, mut acc) = (a, 0.0);
    while a < base {
        acc += a.powi(-(s as i32));
        a += 1.0;
    }
    if a == f64::INFINITY {
        return acc;
    }
    // a^(1-s)/(s-1) + a^-s/2 + Σ_k B_2k/(2k)! s(s+1)..(s+2k-2) a^(-s-2k+1)
    let inv = 1.0 / a;
    let lead = a.powf(-sf); // a^-s
    let mut tail = lead * a / (sf - 1.0) + 0.5 * lead;
    let mut rising = sf; // s(s+1)...(s+2k-2)
    let mut pw = lead * inv; // a^(-s-2k+1)
    for (k, &b) in B2K_OVER_FACT.iter().enumerate() {
        let term = b * rising * pw;
        tail += term;
        if term.abs() <= tail.abs() * 1e-18 {
            break;
        }
        let k2 = 2.0 * (k as f64 + 1.0);
        rising *= (sf + k2 - 1.0) * (sf + k2);
        pw *= inv * inv;
    }
    acc + tail
}

/// ψ'(x): reflection below 1/2 (so its value at the poles is torch's: +inf at 0, large finite
/// numbers where sin(π x) rounds away from 0), then ζ(2, x).
fn trigamma(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x < 0.5 {
        let s = (PI * x).sin();
        return PI * PI / (s * s) - hurwitz_pos(2, 1.0 - x);
    }
    hurwitz_pos(2, x)
}

/// ψ⁽ⁿ⁾(x) for n >= 0: (-1)^(n+1) n! ζ(n+1, x), the sum shifted by recurrence for x < 1/2.
pub fn polygamma(n: u32, x: f64) -> f64 {
    match n {
        0 => return digamma(x),
        1 => return trigamma(x),
        _ => {}
    }
    if x.is_nan() || x == f64::INFINITY {
        return f64::NAN;
    }
    let sign = if n % 2 == 1 { 1.0 } else { -1.0 };
    if x <= 0.0 && x == x.floor() {
        return sign * f64::INFINITY;
    }
    if x < -1e6 {
        return f64::NAN; // far below the poles: too many terms to sum (torch's loop does not return)
    }
    if n > 170 {
        // n! overflows: ±inf times ζ(n+1, x), whose first term x^-(n+1) is infinite below 1 and 0
        // above it (inf·0 = nan, as torch's); summing the series would take ~n steps
        return if x > 1.0 { f64::NAN } else { sign * f64::INFINITY };
    }
    let mut fact = 1.0;
    for k in 2..=n {
        fact *= k as f64;
    }
    let (mut x, mut acc) = (x, 0.0);
    while x < 0.5 {
        acc += x.powi(-(n as i32 + 1));
        x += 1.0;
    }
    sign * fact * (acc + hurwitz_pos(n + 1, x))
}

/// ψ⁽ⁿ⁾(x) for a float32 x: trigamma's reflection term in float32 arithmetic, as torch's float
/// kernel (so its finite values at the poles, where sin(π x) rounds away from 0, are torch's).
pub fn polygamma_f32(n: u32, x: f32) -> f32 {
    if n == 1 && x < 0.5 {
        const PI32: f32 = std::f32::consts::PI;
        let s = (PI32 * x).sin();
        return ((PI32 * PI32 / (s * s)) as f64 - hurwitz_pos(2, 1.0 - x as f64)) as f32;
    }
    polygamma(n, x as f64) as f32
}

/// Σ_j x^2j / 4^j / (j! (j+ν)!) · (x/2)^ν for ν = 0, 1: the power series of I_ν.
fn bessel_i_series(nu: u32, x: f64) -> f64 {
    let q = 0.25 * x * x;
    let mut term = if nu == 0 { 1.0 } else { 0.5 * x };
    let mut sum = term;
    let mut k = 1.0;
    loop {
        term *= q / (k * (k + nu as f64));
        sum += term;
        if term.abs() <= sum.abs() * 1e-17 {
            return sum;
        }
        k += 1.0;
    }
}

/// e^|x| / √(2π|x|) Σ_k (-1)^k a_k(ν) / |x|^k: the large-argument expansion of I_ν (|x| >= 30),
/// as e^|x| times the rest so that it overflows where e^|x| does (torch's).
fn bessel_i_asymptotic(nu: u32, x: f64) -> f64 {
    let ax = x.abs();
    let mu = 4.0 * (nu * nu) as f64;
    let mut term = 1.0;
    let mut sum = 1.0;
    for k in 1..60 {
        let odd = (2 * k - 1) as f64;
        term *= -(mu - odd * odd) / (k as f64 * 8.0 * ax);
        sum += term;
        if term.abs() <= 1e-17 * sum.abs() {
            break;
        }
    }
    let v = ax.exp() * (sum / (2.0 * PI * ax).sqrt());
    if nu == 1 && x < 0.0 { -v } else { v }
}

/// I₀(x), the modified Bessel function of the first kind of order 0 (NaN at ±inf, as torch's).
pub fn i0(x: f64) -> f64 {
    if x.is_infinite() {
        return f64::NAN;
    }
    if x.abs() < 30.0 { bessel_i_series(0, x) } else { bessel_i_asymptotic(0, x) }
}

/// I₁(x), of order 1 (odd; NaN at ±inf, as torch's).
pub fn i1(x: f64) -> f64 {
    if x.is_infinite() {
        return f64::NAN;
    }
    if x.abs() < 30.0 { bessel_i_series(1, x) } else { bessel_i_asymptotic(1, x) }
}

/// log Γ_p(x) = p(p-1)/4 log π + Σ_{j<p} lgamma(x - j/2).
pub fn mvlgamma(x: f64, p: u32) -> f64 {
    let mut s = (p as f64) * (p as f64 - 1.0) / 4.0 * PI.ln();
    for j in 0..p {
        s += libm::lgamma(x - j as f64 / 2.0);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rtol: f64) -> bool {
        (a - b).abs() <= rtol * b.abs().max(1e-300)
    }

    #[test]
    fn erfinv_inverts_erf() {
        for &y in &[1e-300, 1e-10, 0.1, 0.5, 1.0, 2.0, 3.5, 5.0, 7.0, 8.0] {
            for &s in &[1.0, -1.0] {
                let x = libm::erf(s * y);
                if x.abs() < 1.0 {
                    assert!(close(libm::erf(erfinv(x)), x, 4e-16), "{y}");
                }
            }
        }
        assert_eq!(erfinv(1.0), f64::INFINITY);
        assert!(erfinv(1.5).is_nan());
    }

    #[test]
    fn known_values() {
        assert!(close(digamma(1.0), -0.5772156649015329, 1e-15));
        assert!(close(digamma(0.5), -1.9635100260214235, 1e-15));
        assert!(close(polygamma(1, 1.0), PI * PI / 6.0, 1e-15));
        assert!(close(polygamma(2, 1.0), -2.4041138063191885, 1e-15));
        assert!(close(i0(1.0), 1.2660658777520082, 1e-15));
        assert!(close(i1(1.0), 0.5651591039924851, 1e-15));
    }
}
