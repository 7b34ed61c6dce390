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

/// 0 = baseline, 1 = AVX2+FMA, 2 = AVX-512 (F, VL, DQ).
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
    let found = if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vl") && is_x86_feature_detected!("avx512dq") {
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

// ---- d[i] = f(s[i]) -------------------------------------------------------------------------

#[inline(always)]
fn map_body<T: Copy, U, F: Fn(T) -> U>(s: &[T], d: &mut [MaybeUninit<U>], f: &F) {
    let n = s.len().min(d.len());
    let (s, d) = (&s[..n], &mut d[..n]);
    for i in 0..n {
        d[i].write(f(s[i]));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn map_v3<T: Copy, U, F: Fn(T) -> U>(s: &[T], d: &mut [MaybeUninit<U>], f: &F) {
    map_body(s, d, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
unsafe fn map_v4<T: Copy, U, F: Fn(T) -> U>(s: &[T], d: &mut [MaybeUninit<U>], f: &F) {
    map_body(s, d, f)
}

/// Outputs of at least this many bytes per call are written with non-temporal (streaming)
/// stores: they bypass the cache, so a destination that will not stay cached anyway is not read
/// in first (a plain store reads each line before writing it: a third more memory traffic).
pub const STREAM_MIN_BYTES: usize = 1 << 20;

fn stream_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("FERROGRAD_STREAM").map(|v| v != "0").unwrap_or(true))
}

#[inline(always)]
fn wants_stream<U>(n: usize) -> bool {
    let w = std::mem::size_of::<U>();
    (w == 4 || w == 8) && n * w >= STREAM_MIN_BYTES && stream_enabled()
}

/// `body` over 16-element blocks of the output, each computed into a local block and written
/// with streaming stores at 64-byte-aligned addresses; the unaligned head and the tail through
/// `edge(lo, hi)`. U is 4 or 8 bytes (`wants_stream`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn stream_blocks<U>(d: &mut [MaybeUninit<U>], edge: impl Fn(usize, usize, &mut [MaybeUninit<U>]), block: impl Fn(usize, &mut [MaybeUninit<U>; 16])) {
    use std::arch::x86_64::{__m512i, _mm512_loadu_si512, _mm512_stream_si512, _mm_sfence};
    let n = d.len();
    let w = std::mem::size_of::<U>();
    let misalign = (d.as_ptr() as usize) % 64;
    let head = if misalign == 0 { 0 } else { ((64 - misalign) / w).min(n) };
    if misalign % w != 0 {
        return edge(0, n, d);
    }
    edge(0, head, &mut d[..head]);
    let mut i = head;
    let mut buf: [MaybeUninit<U>; 16] = [const { MaybeUninit::uninit() }; 16];
    while i + 16 <= n {
        block(i, &mut buf);
        let src = buf.as_ptr() as *const __m512i;
        let dst = d.as_mut_ptr().add(i) as *mut __m512i;
        for k in 0..(16 * w / 64) {
            // SAFETY: dst + k is 64-byte aligned and inside d; buf holds 16 written elements.
            _mm512_stream_si512(dst.add(k), _mm512_loadu_si512(src.add(k)));
        }
        i += 16;
    }
    edge(i, n, &mut d[i..]);
    _mm_sfence();
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
unsafe fn map_v4_stream<T: Copy, U, F: Fn(T) -> U>(s: &[T], d: &mut [MaybeUninit<U>], f: &F) {
    let n = s.len().min(d.len());
    stream_blocks(&mut d[..n], |lo, hi, d| map_body(&s[lo..hi], d, f), |i, b| {
        let s = &s[i..i + 16];
        for j in 0..16 {
            b[j].write(f(s[j]));
        }
    })
}

/// d[i] = f(s[i]) for i < min(len); single-threaded, widest ISA.
#[inline]
pub fn map_run<T: Copy, U, F: Fn(T) -> U>(s: &[T], d: &mut [MaybeUninit<U>], f: &F) {
    #[cfg(target_arch = "x86_64")]
    match level() {
        // SAFETY: the features were detected at run time.
        2 if wants_stream::<U>(d.len()) => return unsafe { map_v4_stream(s, d, f) },
        2 => return unsafe { map_v4(s, d, f) },
        1 => return unsafe { map_v3(s, d, f) },
        _ => {}
    }
    map_body(s, d, f)
}

// ---- d[i] = f(a[i], b[i]) -------------------------------------------------------------------

#[inline(always)]
fn zip_body<T: Copy, U, F: Fn(T, T) -> U>(a: &[T], b: &[T], d: &mut [MaybeUninit<U>], f: &F) {
    let n = a.len().min(b.len()).min(d.len());
    let (a, b, d) = (&a[..n], &b[..n], &mut d[..n]);
    for i in 0..n {
        d[i].write(f(a[i], b[i]));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn zip_v3<T: Copy, U, F: Fn(T, T) -> U>(a: &[T], b: &[T], d: &mut [MaybeUninit<U>], f: &F) {
    zip_body(a, b, d, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
unsafe fn zip_v4<T: Copy, U, F: Fn(T, T) -> U>(a: &[T], b: &[T], d: &mut [MaybeUninit<U>], f: &F) {
    zip_body(a, b, d, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
unsafe fn zip_v4_stream<T: Copy, U, F: Fn(T, T) -> U>(a: &[T], b: &[T], d: &mut [MaybeUninit<U>], f: &F) {
    let n = a.len().min(b.len()).min(d.len());
    stream_blocks(&mut d[..n], |lo, hi, d| zip_body(&a[lo..hi], &b[lo..hi], d, f), |i, o| {
        let (a, b) = (&a[i..i + 16], &b[i..i + 16]);
        for j in 0..16 {
            o[j].write(f(a[j], b[j]));
        }
    })
}

/// d[i] = f(a[i], b[i]); single-threaded, widest ISA.
#[inline]
pub fn zip_run<T: Copy, U, F: Fn(T, T) -> U>(a: &[T], b: &[T], d: &mut [MaybeUninit<U>], f: &F) {
    #[cfg(target_arch = "x86_64")]
    match level() {
        2 if wants_stream::<U>(d.len()) => return unsafe { zip_v4_stream(a, b, d, f) },
        2 => return unsafe { zip_v4(a, b, d, f) },
        1 => return unsafe { zip_v3(a, b, d, f) },
        _ => {}
    }
    zip_body(a, b, d, f)
}

// ---- d[i] = f(d[i], b[i]) ------------------------------------------------------------------

#[inline(always)]
fn update_body<T: Copy, F: Fn(T, T) -> T>(d: &mut [T], b: &[T], f: &F) {
    let n = d.len().min(b.len());
    let (d, b) = (&mut d[..n], &b[..n]);
    for i in 0..n {
        d[i] = f(d[i], b[i]);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn update_v3<T: Copy, F: Fn(T, T) -> T>(d: &mut [T], b: &[T], f: &F) {
    update_body(d, b, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
unsafe fn update_v4<T: Copy, F: Fn(T, T) -> T>(d: &mut [T], b: &[T], f: &F) {
    update_body(d, b, f)
}

/// d[i] = f(d[i], b[i]) in place; single-threaded, widest ISA.
#[inline]
pub fn update_run<T: Copy, F: Fn(T, T) -> T>(d: &mut [T], b: &[T], f: &F) {
    #[cfg(target_arch = "x86_64")]
    match level() {
        // SAFETY: the features were detected at run time.
        2 => return unsafe { update_v4(d, b, f) },
        1 => return unsafe { update_v3(d, b, f) },
        _ => {}
    }
    update_body(d, b, f)
}

// ---- sum in f64 -----------------------------------------------------------------------------

const LANES: usize = 16;

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
    let mut tail = 0.0;
    for &v in chunks.remainder() {
        tail += g(v);
    }
    // Pairwise combine of the lanes.
    let mut w = LANES;
    while w > 1 {
        w /= 2;
        for i in 0..w {
            acc[i] += acc[i + w];
        }
    }
    acc[0] + tail
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn sum_v3<T: Copy, G: Fn(T) -> f64>(s: &[T], g: &G) -> f64 {
    sum_body(s, g)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx2,fma")]
unsafe fn sum_v4<T: Copy, G: Fn(T) -> f64>(s: &[T], g: &G) -> f64 {
    sum_body(s, g)
}

#[inline]
pub fn sum_run<T: Copy, G: Fn(T) -> f64>(s: &[T], g: &G) -> f64 {
    #[cfg(target_arch = "x86_64")]
    match level() {
        2 => return unsafe { sum_v4(s, g) },
        1 => return unsafe { sum_v3(s, g) },
        _ => {}
    }
    sum_body(s, g)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The streaming-store paths (outputs of STREAM_MIN_BYTES or more) give the plain loop's
    /// results at every alignment of the output, for 4- and 8-byte elements.
    #[test]
    fn streamed_outputs_match_plain_loops() {
        let n = STREAM_MIN_BYTES / 4 + 37;
        let a: Vec<f32> = (0..n + 16).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..n + 16).map(|i| (i as f32 * 0.11).cos()).collect();
        for shift in [0usize, 1, 3, 15] {
            let mut out = vec![MaybeUninit::<f32>::uninit(); n + 16];
            map_run(&a[shift..shift + n], &mut out[shift..shift + n], &|x: f32| x * 3.0 - 1.0);
            assert!((0..n).all(|i| unsafe { out[shift + i].assume_init() } == a[shift + i] * 3.0 - 1.0), "map, shift {shift}");
            zip_run(&a[..n], &b[..n], &mut out[shift..shift + n], &|x: f32, y: f32| x * y + 0.5);
            assert!((0..n).all(|i| unsafe { out[shift + i].assume_init() } == a[i] * b[i] + 0.5), "zip, shift {shift}");
            let wide: Vec<f64> = a.iter().map(|&v| v as f64).collect();
            let mut out64 = vec![MaybeUninit::<f64>::uninit(); n + 16];
            map_run(&wide[..n], &mut out64[shift..shift + n], &|x: f64| x + 2.0);
            assert!((0..n).all(|i| unsafe { out64[shift + i].assume_init() } == wide[i] + 2.0), "map f64, shift {shift}");
        }
    }
}
