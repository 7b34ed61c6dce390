//! Single-precision matrix product for AVX-512 CPUs, for the mid-size float32 products whose
//! A has its rows along k (`cpu::use_sgemm` says which; the others stay on the gemm crate).
//!
//! Why our own: in a deep network's step an operand of a product was often last touched long
//! ago (a weight in the forward, a weight again in the backward's `g @ W.T`) and comes from DRAM.
//! The gemm crate packs such an operand before it computes, so the wait for memory adds to the
//! product's time. This kernel packs B one micro-panel at a time and, while it multiplies with
//! one, asks for the lines of the next (software prefetch), so the transfers overlap the
//! arithmetic. Measured on the 16-branch matmul graph of benches/compare_torch.py (2-core Zen 4, two
//! threads): a step 2% faster (eight alternating
//! process pairs, median 32.1 against 32.8 ms), the backward's `g @ W.T` 345-353 us against
//! 391-395 us on one thread (one instrumented run). With its operands in cache it runs from 20%
//! faster to 3% slower than the crate from 128 rows on, and 5-10% slower below (those stay on
//! the crate). A product whose A is stored column-major (`x.T @ g`) measured slower here than on
//! the crate, packed in place and as the transposed problem (that graph and a small MLP step 3% slower), so those stay
//! on the crate too. In the products compared with k <= 512 the bits equal the crate's (it, too,
//! adds each element's products in one chain).
//!
//! Shape of the computation (the Goto/BLIS loop nest, written from its description): blocks of
//! MC rows of A (`ic`), k in blocks of KC (`pc`), B in micro-panels of NR columns (`jr`, packed
//! just before use), and an MR x NR register tile for each MR rows of A (`ir`), which the tile
//! reads in place: MR sequential streams. Every element of C is one chain of fused
//! multiply-adds over k = 0, 1, ..., K-1 in order, starting from zero (a later k block starts
//! from the value the previous one stored). So the bits do not depend on how C is cut into
//! blocks or tiles, which is what lets the team split a product (or pair two) without changing
//! a result; the tests check the bits against that chain computed one element at a time.

use std::arch::x86_64::*;

/// Rows of the register tile (one broadcast A element each per k step).
const MR: usize = 8;
/// 16-lane vectors per row of the register tile.
const NV: usize = 3;
/// Columns of the register tile: MR x NV = 24 accumulators of the 32 vector registers, and
/// powers of two split into whole tiles (64 = 48 + 16, a narrower tile for the last panel).
const NR: usize = 16 * NV;
/// k per block (blocks of equal size up to KC). A packed B micro-panel (KC x NR, 96 KB) sits
/// in L2. Measured against 128, 192 and 256: fewer passes over C won.
const KC: usize = 512;
/// Rows of A per block: the rows one micro-panel of B meets (up to MC x KC, 512 KB) stay in L2.
const MC: usize = 256;

/// A strided 2-d region of f32 (a B micro-panel) whose lines are prefetched a few at a time.
struct Lines {
    /// Start of each of the `outer` runs, `step` elements apart; each run `inner` contiguous elements.
    base: *const f32,
    outer: usize,
    step: usize,
    inner: usize,
    /// Cursor: run `o`, byte address `at` inside it.
    o: usize,
    at: usize,
}

impl Lines {
    /// The region rows x cols (strides rs, cs) when one of its strides is 1; none otherwise
    /// (then nothing is prefetched).
    fn new(base: *const f32, rows: usize, cols: usize, rs: usize, cs: usize) -> Option<Lines> {
        if rows == 0 || cols == 0 {
            return None;
        }
        let (outer, step, inner) = if cs == 1 {
            (rows, rs, cols)
        } else if rs == 1 {
            (cols, cs, rows)
        } else {
            return None;
        };
        Some(Lines { base, outer, step, inner, o: 0, at: (base as usize) & !63 })
    }

    fn len(&self) -> usize {
        // lines per run, counting the partial line at each end
        self.outer * ((self.inner * 4).div_ceil(64) + 1)
    }

    /// Prefetches up to `n` more lines (into L2).
    #[inline(always)]
    unsafe fn issue(&mut self, mut n: usize) {
        while n > 0 && self.o < self.outer {
            let start = self.base.wrapping_add(self.o * self.step) as usize;
            let end = start + self.inner * 4;
            if self.at < (start & !63) {
                self.at = start & !63;
            }
            if self.at >= end {
                self.o += 1;
                continue;
            }
            _mm_prefetch::<_MM_HINT_T1>(self.at as *const i8);
            self.at += 64;
            n -= 1;
        }
    }
}

/// 64-byte aligned scratch for the packed B micro-panel, kept per thread.
struct Scratch(Vec<__m512>);

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = const { std::cell::RefCell::new(Scratch(Vec::new())) };
}

/// C[m, n] = A[m, k] B[k, n], A with unit column stride. C is written, never read (row stride
/// `c_rs`, column stride 1).
///
/// # Safety
/// `simd::level() == 2` (the features this is compiled for); A readable at `i * a_rs + p`, B at `p * b_rs + j * b_cs` and C writable at
/// `i * c_rs + j` for i < m, p < k, j < n; C does not overlap A or B.
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn sgemm(m: usize, n: usize, k: usize, a: *const f32, a_rs: usize, b: *const f32, b_rs: usize, b_cs: usize, c: *mut f32, c_rs: usize) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        for i in 0..m {
            std::ptr::write_bytes(c.add(i * c_rs), 0, n);
        }
        return;
    }
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        if s.0.len() < KC * NR / 16 {
            s.0 = vec![_mm512_setzero_ps(); KC * NR / 16];
        }
        let bpack = s.0.as_mut_ptr() as *mut f32;
        let np = n.div_ceil(NR);
        // k in equal blocks of at most KC (784 = 392 + 392, not 512 + 272)
        let kb = k.div_ceil(k.div_ceil(KC)).next_multiple_of(8).min(KC);
        let b_region = |pc: usize, jr: usize| {
            let j0 = jr * NR;
            Lines::new(b.wrapping_add(pc * b_rs + j0 * b_cs), kb.min(k - pc), NR.min(n - j0), b_rs, b_cs)
        };
        for ic in (0..m).step_by(MC) {
            let mc = MC.min(m - ic);
            let mp = mc.div_ceil(MR);
            for pc in (0..k).step_by(kb) {
                let kc = kb.min(k - pc);
                for jr in 0..np {
                    let (j0, nc) = (jr * NR, NR.min(n - jr * NR));
                    pack_b(bpack, kc, nc, b.add(pc * b_rs + j0 * b_cs), b_rs, b_cs);
                    // the micro-panel that comes next, a share of its lines before each tile
                    let mut next = if jr + 1 < np {
                        b_region(pc, jr + 1)
                    } else if pc + kb < k {
                        b_region(pc + kb, 0)
                    } else if ic + MC < m {
                        b_region(0, 0)
                    } else {
                        None
                    };
                    let quota = next.as_ref().map_or(0, |l| l.len().div_ceil(mp));
                    for ir in 0..mp {
                        if let Some(l) = next.as_mut() {
                            l.issue(quota);
                        }
                        let (i0, rows) = (ic + ir * MR, MR.min(mc - ir * MR));
                        // rows past the end read row i0 again (their results are not stored)
                        let ar: [*const f32; MR] = std::array::from_fn(|r| a.add((i0 + if r < rows { r } else { 0 }) * a_rs + pc));
                        let cp = c.add(i0 * c_rs + j0);
                        match nc.div_ceil(16) {
                            1 => tile::<1>(kc, ar, bpack, cp, c_rs, rows, nc, pc > 0),
                            2 => tile::<2>(kc, ar, bpack, cp, c_rs, rows, nc, pc > 0),
                            _ => tile::<NV>(kc, ar, bpack, cp, c_rs, rows, nc, pc > 0),
                        }
                    }
                }
            }
        }
    });
}

/// B's micro-panel (kc x nc, strides rs/cs) as kc rows of NR elements; columns past nc are zeros.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
unsafe fn pack_b(dst: *mut f32, kc: usize, nc: usize, b: *const f32, rs: usize, cs: usize) {
    if cs == 1 {
        let mk = masks(nc);
        for p in 0..kc {
            let s = b.add(p * rs);
            for (v, &m) in mk.iter().enumerate() {
                _mm512_store_ps(dst.add(p * NR + 16 * v), _mm512_maskz_loadu_ps(m, s.wrapping_add(16 * v)));
            }
        }
    } else if rs == 1 {
        // columns along k: 8 x 8 transposes for whole groups of 8 columns, then the rest
        let j8 = nc / 8 * 8;
        let mut p = 0;
        while p + 8 <= kc {
            for j in (0..j8).step_by(8) {
                super::simd::transpose8x8_32(b.add(p + j * cs), cs, dst.add(p * NR + j), NR);
            }
            p += 8;
        }
        for q in 0..kc {
            let lo = if q < p { j8 } else { 0 };
            for j in lo..NR {
                *dst.add(q * NR + j) = if j < nc { *b.add(q + j * cs) } else { 0.0 };
            }
        }
    } else {
        for p in 0..kc {
            for j in 0..NR {
                *dst.add(p * NR + j) = if j < nc { *b.add(p * rs + j * cs) } else { 0.0 };
            }
        }
    }
}

/// Lane masks for the first `nc` of NR columns (one per vector).
#[inline]
fn masks(nc: usize) -> [__mmask16; NV] {
    std::array::from_fn(|v| {
        let lanes = nc.saturating_sub(16 * v).min(16);
        ((1u32 << lanes) - 1) as u16
    })
}

/// The register tile, NVT vectors wide (narrower ones for the last micro-panel):
/// C[0..mc, 0..nc] (row stride c_rs) = (acc ? C : 0) + A rows x the packed B panel over kc;
/// A's row r starts at ar[r], k contiguous.
#[inline]
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
#[allow(clippy::too_many_arguments)]
unsafe fn tile<const NVT: usize>(kc: usize, ar: [*const f32; MR], bp: *const f32, c: *mut f32, c_rs: usize, mc: usize, nc: usize, acc: bool) {
    let mk = masks(nc);
    let mut t = [[_mm512_setzero_ps(); NVT]; MR];
    if acc {
        for (r, row) in t.iter_mut().enumerate().take(mc) {
            let s = c.add(r * c_rs);
            for v in 0..NVT {
                row[v] = _mm512_maskz_loadu_ps(mk[v], s.wrapping_add(16 * v));
            }
        }
    }
    for p in 0..kc {
        let bv: [__m512; NVT] = std::array::from_fn(|v| _mm512_load_ps(bp.add(p * NR + 16 * v)));
        for (r, row) in t.iter_mut().enumerate() {
            let x = _mm512_set1_ps(*ar[r].add(p));
            for v in 0..NVT {
                row[v] = _mm512_fmadd_ps(x, bv[v], row[v]);
            }
        }
    }
    for (r, row) in t.iter().enumerate().take(mc) {
        let d = c.add(r * c_rs);
        if nc == 16 * NVT {
            for (v, x) in row.iter().enumerate() {
                _mm512_storeu_ps(d.add(16 * v), *x);
            }
        } else {
            for v in 0..NVT {
                _mm512_mask_storeu_ps(d.wrapping_add(16 * v), mk[v], row[v]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic values with full mantissas (so that a different summation order shows).
    fn vals(n: usize, seed: u64) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
            })
            .collect()
    }

    /// One product through `sgemm` with the given strides, checked element by element against
    /// the chain of fused multiply-adds over k in order (the bits the kernel promises), and
    /// checked to leave C's padding (row stride > n) untouched.
    #[allow(clippy::too_many_arguments)]
    fn check(m: usize, n: usize, k: usize, a_rs: usize, b_rs: usize, b_cs: usize, c_rs: usize) {
        let a = vals(m.max(1) * a_rs.max(k), (m * 31 + k) as u64);
        let blen = if k == 0 || n == 0 { 1 } else { (k - 1) * b_rs + (n - 1) * b_cs + 1 };
        let b = vals(blen, (n * 17 + k) as u64);
        let mut c = vec![f32::NAN; m * c_rs + 1];
        unsafe { sgemm(m, n, k, a.as_ptr(), a_rs, b.as_ptr(), b_rs, b_cs, c.as_mut_ptr(), c_rs) };
        for i in 0..m {
            for j in 0..c_rs {
                let got = c[i * c_rs + j];
                if j >= n {
                    assert!(got.is_nan(), "padding written at ({i}, {j}) of {m}x{n}x{k}");
                    continue;
                }
                let mut want = 0f32;
                for p in 0..k {
                    want = a[i * a_rs + p].mul_add(b[p * b_rs + j * b_cs], want);
                }
                assert_eq!(got.to_bits(), want.to_bits(), "C({i}, {j}) of {m}x{n}x{k} (a_rs {a_rs}, b {b_rs}/{b_cs}, c_rs {c_rs}): {got} vs {want}");
            }
        }
        assert!(c[m * c_rs].is_nan(), "written past C");
    }

    #[test]
    fn bits_of_the_fma_chain_for_every_layout_and_edge() {
        if super::super::simd::level() != 2 {
            eprintln!("sgemm: no AVX-512 here (or FERROGRAD_SIMD < 2); the kernel is not used");
            return;
        }
        // (m, n, k): tile edges in both directions, k past one block (KC = 512), m past one
        // block (MC = 256), k = 0 and 1
        let shapes = [(1, 1, 1), (6, 64, 8), (7, 65, 3), (5, 17, 9), (64, 64, 64), (100, 77, 300), (13, 130, 257), (300, 70, 40), (257, 33, 1100), (3, 200, 0), (12, 48, 1)];
        for &(m, n, k) in &shapes {
            // B row-major, column-major, neither; A rows padded; C rows padded
            check(m, n, k, k, n, 1, n);
            check(m, n, k, k + 3, 1, k.max(1), n + 5);
            check(m, n, k, k + 1, 2 * n + 1, 2, n + 1);
        }
    }
}
