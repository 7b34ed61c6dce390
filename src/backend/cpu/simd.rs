//! Runtime ISA dispatch for the elementwise and reduction inner loops.
//!
//! The wheel is built for baseline x86-64 (SSE2), so auto-vectorised loops would use 128-bit
//! registers only. Each inner loop here is compiled three times — baseline, AVX2+FMA and
//! AVX-512 — and the widest the CPU supports is picked once at run time. The closures are
//! inlined into each variant, so `map_run(s, d, |x| x * y)` becomes a vector loop.
//!
//! No variant uses fused multiply-add on its own (Rust never contracts `a * b + c`), so every
//! variant computes bit-identical results.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU8, Ordering};

static LEVEL: AtomicU8 = AtomicU8::new(u8::MAX);

/// 0 = baseline, 1 = AVX2+FMA, 2 = AVX-512 (F, VL, DQ; with AVX2+FMA).
#[inline]
pub fn level() -> u8 {
    let l = LEVEL.load(Ordering::Relaxed);
    if l != u8::MAX {
        return l;
    }
    let l = detect();
    LEVEL.store(l, Ordering::Relaxed);
    l
}

#[cfg(target_arch = "x86_64")]
fn detect() -> u8 {
    // FERROGRAD_SIMD=0|1|2 caps the level (for measurements and for testing the fallbacks).
    let cap = std::env::var("FERROGRAD_SIMD").ok().and_then(|v| v.parse::<u8>().ok()).unwrap_or(2);
    // (level 2 code is also compiled with AVX2 and FMA: every AVX-512 CPU has them, but a
    // virtual machine may hide a flag, so they are checked too)
    let found = if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vl") && is_x86_feature_detected!("avx512dq") && is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        2
    } else if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        1
    } else {
        0
    };
    found.min(cap)
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> u8 {
    0
}

/// The three compilations of one inner loop and the run-time pick among them: `$body` (an
/// `#[inline(always)]` fn) compiled for baseline, AVX2+FMA (`$v3`) and AVX-512 (`$v4`), and the
/// public `$name` that calls the widest the CPU has.
macro_rules! dispatched {
    ($(#[$m:meta])* $name:ident, $v3:ident, $v4:ident, $body:ident, [$($gen:tt)*], ($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn $v3<$($gen)*>($($arg: $ty),*) -> $ret {
            $body($($arg),*)
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
        unsafe fn $v4<$($gen)*>($($arg: $ty),*) -> $ret {
            $body($($arg),*)
        }

        $(#[$m])*
        #[inline]
        pub fn $name<$($gen)*>($($arg: $ty),*) -> $ret {
            #[cfg(target_arch = "x86_64")]
            match level() {
                // SAFETY: the features were detected at run time.
                2 => return unsafe { $v4($($arg),*) },
                1 => return unsafe { $v3($($arg),*) },
                _ => {}
            }
            $body($($arg),*)
        }
    };
}

// ---- d[i] = f(s[i]) -------------------------------------------------------------------------

#[inline(always)]
fn map_body<T: Copy, U, F: Fn(T) -> U>(s: &[T], d: &mut [MaybeUninit<U>], f: &F) {
    let n = s.len().min(d.len());
    let (s, d) = (&s[..n], &mut d[..n]);
    for i in 0..n {
        d[i].write(f(s[i]));
    }
}

dispatched!(
    /// d[i] = f(s[i]) for i < min(len); single-threaded, widest ISA.
    map_run, map_v3, map_v4, map_body, [T: Copy, U, F: Fn(T) -> U], (s: &[T], d: &mut [MaybeUninit<U>], f: &F) -> ()
);

// ---- d[i] = f(a[i], b[i]) -------------------------------------------------------------------

#[inline(always)]
fn zip_body<T: Copy, U, F: Fn(T, T) -> U>(a: &[T], b: &[T], d: &mut [MaybeUninit<U>], f: &F) {
    let n = a.len().min(b.len()).min(d.len());
    let (a, b, d) = (&a[..n], &b[..n], &mut d[..n]);
    for i in 0..n {
        d[i].write(f(a[i], b[i]));
    }
}

dispatched!(
    /// d[i] = f(a[i], b[i]); single-threaded, widest ISA.
    zip_run, zip_v3, zip_v4, zip_body, [T: Copy, U, F: Fn(T, T) -> U], (a: &[T], b: &[T], d: &mut [MaybeUninit<U>], f: &F) -> ()
);

// ---- d[i] = f(d[i], b[i]) ------------------------------------------------------------------

#[inline(always)]
fn update_body<T: Copy, F: Fn(T, T) -> T>(d: &mut [T], b: &[T], f: &F) {
    let n = d.len().min(b.len());
    let (d, b) = (&mut d[..n], &b[..n]);
    for i in 0..n {
        d[i] = f(d[i], b[i]);
    }
}

dispatched!(
    /// d[i] = f(d[i], b[i]) in place; single-threaded, widest ISA.
    update_run, update_v3, update_v4, update_body, [T: Copy, F: Fn(T, T) -> T], (d: &mut [T], b: &[T], f: &F) -> ()
);

// ---- d[i] = f(d[i]) and max(s) -------------------------------------------------------------

#[inline(always)]
fn apply_body<T: Copy, F: Fn(T) -> T>(d: &mut [T], f: &F) {
    for v in d.iter_mut() {
        *v = f(*v);
    }
}

dispatched!(
    /// d[i] = f(d[i]) in place; single-threaded, widest ISA.
    apply_run, apply_v3, apply_v4, apply_body, [T: Copy, F: Fn(T) -> T], (d: &mut [T], f: &F) -> ()
);

#[inline(always)]
fn max_body<T: Copy + PartialOrd>(s: &[T]) -> Option<T> {
    let first = *s.first()?;
    // independent lanes (a single running max is one long dependency chain); NaN tracked apart
    let mut acc = [first; 16];
    let mut nan = false;
    let mut chunks = s.chunks_exact(16);
    for c in &mut chunks {
        for i in 0..16 {
            let v = c[i];
            nan |= v != v;
            acc[i] = if v > acc[i] { v } else { acc[i] };
        }
    }
    for &v in chunks.remainder() {
        nan |= v != v;
        acc[0] = if v > acc[0] { v } else { acc[0] };
    }
    if nan {
        return s.iter().copied().find(|v| v != v);
    }
    Some(acc.iter().copied().fold(first, |m, v| if v > m { v } else { m }))
}

dispatched!(
    /// The largest element, NaN when there is one (as torch's max/amax); None for an empty slice.
    max_run, max_v3, max_v4, max_body, [T: Copy + PartialOrd], (s: &[T]) -> Option<T>
);

// ---- acc[i] += f64(s[i]) ----------------------------------------------------------------------

#[inline(always)]
fn acc_body<T: Copy, G: Fn(T) -> f64>(acc: &mut [f64], s: &[T], g: &G) {
    let n = acc.len().min(s.len());
    let (acc, s) = (&mut acc[..n], &s[..n]);
    for i in 0..n {
        acc[i] += g(s[i]);
    }
}

dispatched!(
    /// acc[i] += g(s[i]); single-threaded, widest ISA (a row added into per-column sums).
    acc_run, acc_v3, acc_v4, acc_body, [T: Copy, G: Fn(T) -> f64], (acc: &mut [f64], s: &[T], g: &G) -> ()
);

// ---- sum in f64 -----------------------------------------------------------------------------

const LANES: usize = 32;

/// Sum of `g(s[i])` in f64 with LANES independent accumulators (vectorises; fixed order, so
/// the result depends only on the data, never on the ISA or thread count).
#[inline(always)]
fn sum_body<T: Copy, G: Fn(T) -> f64>(s: &[T], g: &G) -> f64 {
    let mut acc = [0f64; LANES];
    let mut chunks = s.chunks_exact(LANES);
    for c in &mut chunks {
        for i in 0..LANES {
            acc[i] += g(c[i]);
        }
    }
    combine(acc, chunks.remainder(), g)
}

/// The end of `sum_body`: the remainder summed in order, the lanes combined pairwise.
#[inline(always)]
fn combine<T: Copy, G: Fn(T) -> f64>(mut acc: [f64; LANES], rest: &[T], g: &G) -> f64 {
    let mut tail = 0.0;
    for &v in rest {
        tail += g(v);
    }
    let mut w = LANES;
    while w > 1 {
        w /= 2;
        for i in 0..w {
            acc[i] += acc[i + w];
        }
    }
    acc[0] + tail
}

/// Σ s[i] in f64 for float32 data: `sum_run(s, |v| v as f64)` to the bit (the same LANES
/// accumulators, each a lane of a vector register, the same additions in the same order), with
/// full-width conversions and adds: the compiler vectorised the generic loop 128 bits at a time
/// (2 doubles per add), at a third of torch's speed on a 4M-element sum.
pub fn sum_f32(s: &[f32]) -> f64 {
    #[cfg(target_arch = "x86_64")]
    match level() {
        // SAFETY: the features were detected at run time.
        2 => return unsafe { sum_f32_v4(s) },
        1 => return unsafe { sum_f32_v3(s) },
        _ => {}
    }
    sum_body(s, &|v: f32| v as f64)
}

/// `sum_f32` for one ISA: `$w` f64 lanes per register, LANES / `$w` registers, each holding
/// `$w` of the accumulators; loads of `$w` f32 converted to f64 and added.
macro_rules! sum_f32_isa {
    ($name:ident, $features:literal, $w:literal, $zero:ident, $add:ident, $cvt:ident, $load:ident, $store:ident) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        unsafe fn $name(s: &[f32]) -> f64 {
            use std::arch::x86_64::*;
            let mut a = [$zero(); LANES / $w];
            let mut chunks = s.chunks_exact(LANES);
            for c in &mut chunks {
                let p = c.as_ptr();
                for (k, a) in a.iter_mut().enumerate() {
                    *a = $add(*a, $cvt($load(p.add($w * k))));
                }
            }
            let mut acc = [0f64; LANES];
            for (k, a) in a.iter().enumerate() {
                $store(acc.as_mut_ptr().add($w * k), *a);
            }
            combine(acc, chunks.remainder(), &|v: f32| v as f64)
        }
    };
}
sum_f32_isa!(sum_f32_v4, "avx512f,avx512vl,avx512dq,avx2,fma", 8, _mm512_setzero_pd, _mm512_add_pd, _mm512_cvtps_pd, _mm256_loadu_ps, _mm512_storeu_pd);
sum_f32_isa!(sum_f32_v3, "avx2,fma", 4, _mm256_setzero_pd, _mm256_add_pd, _mm256_cvtps_pd, _mm_loadu_ps, _mm256_storeu_pd);

dispatched!(
    /// Σ g(s[i]) in f64 (see `sum_body`); single-threaded, widest ISA.
    sum_run, sum_v3, sum_v4, sum_body, [T: Copy, G: Fn(T) -> f64], (s: &[T], g: &G) -> f64
);


// ---- 2-d transpose blocks -------------------------------------------------------------------

/// out[i * os + j] = src[i + j * cs] for i, j < 8, for 4-byte elements, in registers: eight
/// loads of 8 elements, three rounds of shuffles, eight stores (the scalar loop moves one
/// element per load and store). Shuffles move bits unchanged, so any 4-byte type can pass as f32.
///
/// SAFETY: AVX available; src readable at i + j * cs and out writable at i * os + j for i, j < 8.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
pub(crate) unsafe fn transpose8x8_32(src: *const f32, cs: usize, out: *mut f32, os: usize) {
    use std::arch::x86_64::*;
    // r_j holds column j of the block: x(0, j) .. x(7, j)
    let r = |j: usize| _mm256_loadu_ps(src.add(j * cs));
    let (r0, r1, r2, r3, r4, r5, r6, r7) = (r(0), r(1), r(2), r(3), r(4), r(5), r(6), r(7));
    // per 128-bit lane: x(0,0) x(0,1) x(1,0) x(1,1) | x(4,0) x(4,1) x(5,0) x(5,1), ...
    let (t0, t1) = (_mm256_unpacklo_ps(r0, r1), _mm256_unpackhi_ps(r0, r1));
    let (t2, t3) = (_mm256_unpacklo_ps(r2, r3), _mm256_unpackhi_ps(r2, r3));
    let (t4, t5) = (_mm256_unpacklo_ps(r4, r5), _mm256_unpackhi_ps(r4, r5));
    let (t6, t7) = (_mm256_unpacklo_ps(r6, r7), _mm256_unpackhi_ps(r6, r7));
    // x(i, 0..4) | x(i + 4, 0..4) for i = 0..4, then the same for columns 4..8
    let (s0, s1) = (_mm256_shuffle_ps::<0x44>(t0, t2), _mm256_shuffle_ps::<0xEE>(t0, t2));
    let (s2, s3) = (_mm256_shuffle_ps::<0x44>(t1, t3), _mm256_shuffle_ps::<0xEE>(t1, t3));
    let (s4, s5) = (_mm256_shuffle_ps::<0x44>(t4, t6), _mm256_shuffle_ps::<0xEE>(t4, t6));
    let (s6, s7) = (_mm256_shuffle_ps::<0x44>(t5, t7), _mm256_shuffle_ps::<0xEE>(t5, t7));
    let w = |i: usize, v: __m256| _mm256_storeu_ps(out.add(i * os), v);
    w(0, _mm256_permute2f128_ps::<0x20>(s0, s4));
    w(1, _mm256_permute2f128_ps::<0x20>(s1, s5));
    w(2, _mm256_permute2f128_ps::<0x20>(s2, s6));
    w(3, _mm256_permute2f128_ps::<0x20>(s3, s7));
    w(4, _mm256_permute2f128_ps::<0x31>(s0, s4));
    w(5, _mm256_permute2f128_ps::<0x31>(s1, s5));
    w(6, _mm256_permute2f128_ps::<0x31>(s2, s6));
    w(7, _mm256_permute2f128_ps::<0x31>(s3, s7));
}

/// The 8-byte form of `transpose8x8_32`: out[i * os + j] = src[i + j * cs] for i, j < 4.
///
/// SAFETY: AVX available; src readable at i + j * cs and out writable at i * os + j for i, j < 4.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn transpose4x4_64(src: *const f64, cs: usize, out: *mut f64, os: usize) {
    use std::arch::x86_64::*;
    let r = |j: usize| _mm256_loadu_pd(src.add(j * cs));
    let (r0, r1, r2, r3) = (r(0), r(1), r(2), r(3));
    // x(0,0) x(0,1) | x(2,0) x(2,1); x(1,0) x(1,1) | x(3,0) x(3,1); the same for columns 2, 3
    let (t0, t1) = (_mm256_unpacklo_pd(r0, r1), _mm256_unpackhi_pd(r0, r1));
    let (t2, t3) = (_mm256_unpacklo_pd(r2, r3), _mm256_unpackhi_pd(r2, r3));
    _mm256_storeu_pd(out, _mm256_permute2f128_pd::<0x20>(t0, t2));
    _mm256_storeu_pd(out.add(os), _mm256_permute2f128_pd::<0x20>(t1, t3));
    _mm256_storeu_pd(out.add(2 * os), _mm256_permute2f128_pd::<0x31>(t0, t2));
    _mm256_storeu_pd(out.add(3 * os), _mm256_permute2f128_pd::<0x31>(t1, t3));
}

/// out[i * os + j] = src[i + j * cs] for a `b` x `b` block, where `b` is what this returns:
/// 8 for 4-byte and 4 for 8-byte elements on a CPU with AVX; 0 (nothing done) otherwise, and
/// the caller moves the elements itself.
///
/// SAFETY: src readable at i + j * cs and out writable at i * os + j for i, j < 8.
#[inline]
pub unsafe fn transpose_block<T: Copy>(src: *const T, cs: usize, out: *mut T, os: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    if level() >= 1 {
        match std::mem::size_of::<T>() {
            4 => {
                transpose8x8_32(src as *const f32, cs, out as *mut f32, os);
                return 8;
            }
            8 => {
                transpose4x4_64(src as *const f64, cs, out as *mut f64, os);
                return 4;
            }
            _ => {}
        }
    }
    let _ = (src, cs, out, os);
    0
}

/// The side of the blocks `transpose_block` moves for `T` (0: none).
#[inline]
pub fn transpose_block_side<T>() -> usize {
    #[cfg(target_arch = "x86_64")]
    if level() >= 1 {
        return match std::mem::size_of::<T>() {
            4 => 8,
            8 => 4,
            _ => 0,
        };
    }
    0
}
