//! CUDA C source of the kernels, generated per dtype and op. Plain strings, so they exist in
//! every build: `all_sources` feeds the compile check that runs wherever NVRTC is present, GPU
//! or not. The kernels are self-contained (no CUDA headers exist at run time).

use crate::tensor::DType;

/// Most dims an indexed (non-contiguous) operand may have; more are made contiguous first.
pub const MAXD: usize = 8;

pub const PRELUDE: &str = r#"
typedef long long i64;
typedef int i32;
typedef short i16;
typedef signed char i8;
typedef unsigned char u8;
// float16 and bfloat16 as their bits, converted through float32 (a double or an integer rounds
// to float32 first, as torch's conversions): PTX cvt for float16, bit arithmetic for bfloat16
// (round to nearest even, NaN kept quiet), so no CUDA header is needed at run time.
struct fg_f16 {
  unsigned short b;
  __device__ __forceinline__ fg_f16() {}
  __device__ __forceinline__ fg_f16(float v) { asm("cvt.rn.f16.f32 %0, %1;" : "=h"(b) : "f"(v)); }
  template <typename U> __device__ __forceinline__ fg_f16(U v) : fg_f16((float)v) {}
  __device__ __forceinline__ operator float() const { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(b)); return f; }
};
struct fg_bf16 {
  unsigned short b;
  __device__ __forceinline__ fg_bf16() {}
  __device__ __forceinline__ fg_bf16(float v) {
    unsigned u = __float_as_uint(v);
    b = (u & 0x7fffffffu) > 0x7f800000u ? (unsigned short)((u >> 16) | 0x40u) : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  template <typename U> __device__ __forceinline__ fg_bf16(U v) : fg_bf16((float)v) {}
  __device__ __forceinline__ operator float() const { return __uint_as_float(((unsigned)b) << 16); }
};
// float to int8/int16/int32 as the CPU (x86) casts: through int32, INT32_MIN out of range
__device__ __forceinline__ int fg_f2i32(double v) { return (v >= -2147483648.0 && v < 2147483648.0) ? (int)v : (int)0x80000000; }
#define MAXD 8
// The index of an elementwise launch: the shape, each operand's strides (out first), and for each
// dim the magic numbers of a 32-bit division by its size (q = (umulhi(i, mul) + i) >> shr, exact
// for i < 2^31). `fast32`: every offset fits in an int, so the strided path works in 32 bits.
struct Ix { i64 shape[MAXD]; i64 st[4][MAXD]; unsigned mul[MAXD]; unsigned shr[MAXD]; int nd; int contig; int fast32; };
__device__ __forceinline__ float  fg_nan(float)  { return __int_as_float(0x7fc00000); }
__device__ __forceinline__ double fg_nan(double) { return __longlong_as_double(0x7ff8000000000000LL); }
__device__ __forceinline__ i64 fg_nan(i64) { return 0; }
__device__ __forceinline__ bool fg_isnan(float v)  { return v != v; }
__device__ __forceinline__ bool fg_isnan(double v) { return v != v; }
__device__ __forceinline__ bool fg_isnan(i64)  { return false; }
__device__ __forceinline__ bool fg_isnan(bool) { return false; }
template <typename T> __device__ __forceinline__ T fg_max(T a, T b) { return (fg_isnan(a) || fg_isnan(b)) ? fg_nan(a) : (a > b ? a : b); }
template <typename T> __device__ __forceinline__ T fg_min(T a, T b) { return (fg_isnan(a) || fg_isnan(b)) ? fg_nan(a) : (a < b ? a : b); }
// Rounding: the float and double functions; integers are already whole.
#define FG_ROUNDING(name, f32fn, f64fn) \
  __device__ __forceinline__ float name(float v) { return f32fn(v); } \
  __device__ __forceinline__ double name(double v) { return f64fn(v); } \
  __device__ __forceinline__ i64 name(i64 v) { return v; }
FG_ROUNDING(fg_floor, floorf, floor)
FG_ROUNDING(fg_ceil, ceilf, ceil)
FG_ROUNDING(fg_round, rintf, rint)
FG_ROUNDING(fg_trunc, truncf, trunc)
__device__ __forceinline__ float fg_div(float a, float b) { return a / b; }
__device__ __forceinline__ double fg_div(double a, double b) { return a / b; }
__device__ __forceinline__ i64 fg_div(i64 a, i64 b) { return b == 0 ? 0 : a / b; }
__device__ __forceinline__ float fg_floordiv(float a, float b) { return floorf(a / b); }
__device__ __forceinline__ double fg_floordiv(double a, double b) { return floor(a / b); }
__device__ __forceinline__ i64 fg_floordiv(i64 a, i64 b) {
  if (b == 0) return 0;
  i64 q = a / b;
  return ((a % b != 0) && ((a < 0) != (b < 0))) ? q - 1 : q;
}
__device__ __forceinline__ float fg_rem(float a, float b) { float r = fmodf(a, b); return (r != 0.f && ((r < 0.f) != (b < 0.f))) ? r + b : r; }
__device__ __forceinline__ double fg_rem(double a, double b) { double r = fmod(a, b); return (r != 0.0 && ((r < 0.0) != (b < 0.0))) ? r + b : r; }
__device__ __forceinline__ i64 fg_rem(i64 a, i64 b) { if (b == 0) return 0; i64 r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
__device__ __forceinline__ float fg_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double fg_pow(double a, double b) { return pow(a, b); }
__device__ __forceinline__ i64 fg_pow(i64 a, i64 b) {
  if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b % 2 == 0) ? 1 : -1) : 0);
  unsigned long long r = 1, x = (unsigned long long)a; unsigned long long e = (unsigned long long)b;
  while (e) { if (e & 1) r *= x; x *= x; e >>= 1; }
  return (i64)r;
}
__device__ __forceinline__ float fg_sigmoid(float v) { return 1.f / (1.f + expf(-v)); }
__device__ __forceinline__ double fg_sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }
// Float math with the float and double library functions named explicitly.
#define FG_FLOAT1(name, f32fn, f64fn) \
  __device__ __forceinline__ float name(float v) { return f32fn(v); } \
  __device__ __forceinline__ double name(double v) { return f64fn(v); }
FG_FLOAT1(fg_asin, asinf, asin)
FG_FLOAT1(fg_acos, acosf, acos)
FG_FLOAT1(fg_atan, atanf, atan)
FG_FLOAT1(fg_sinh, sinhf, sinh)
FG_FLOAT1(fg_cosh, coshf, cosh)
FG_FLOAT1(fg_asinh, asinhf, asinh)
FG_FLOAT1(fg_acosh, acoshf, acosh)
FG_FLOAT1(fg_atanh, atanhf, atanh)
FG_FLOAT1(fg_erfc, erfcf, erfc)
FG_FLOAT1(fg_erfinv, erfinvf, erfinv)
FG_FLOAT1(fg_lgamma, lgammaf, lgamma)
__device__ __forceinline__ float fg_atan2(float a, float b) { return atan2f(a, b); }
__device__ __forceinline__ double fg_atan2(double a, double b) { return atan2(a, b); }
__device__ __forceinline__ float fg_nextafter(float a, float b) { return nextafterf(a, b); }
__device__ __forceinline__ double fg_nextafter(double a, double b) { return nextafter(a, b); }
template <typename T> __device__ __forceinline__ T fg_sign(T v) { return v > (T)0 ? (T)1 : (v < (T)0 ? (T)-1 : (T)0); }
// Warp shuffles of the reduction accumulators.
__device__ __forceinline__ double fg_shfl(double v, int o) { return __shfl_down_sync(0xffffffffu, v, o); }
__device__ __forceinline__ float fg_shfl(float v, int o) { return __shfl_down_sync(0xffffffffu, v, o); }
__device__ __forceinline__ i64 fg_shfl(i64 v, int o) { return __shfl_down_sync(0xffffffffu, v, o); }
__device__ __forceinline__ bool fg_shfl(bool v, int o) { return __shfl_down_sync(0xffffffffu, (int)v, o) != 0; }
#define FG_UNROLL 4
// Offsets of element i (< 2^31) of K operands in 32-bit arithmetic: magic-number division by each
// dim's size (no hardware divide) and int multiplies; only for launches with ix.fast32.
template <int K> __device__ __forceinline__ void fg_offsets32(const Ix& ix, unsigned i, int* o) {
  #pragma unroll
  for (int j = 0; j < K; ++j) o[j] = 0;
  for (int d = ix.nd - 1; d >= 0; --d) {
    unsigned q = (__umulhi(i, ix.mul[d]) + i) >> ix.shr[d];
    int r = (int)(i - q * (unsigned)ix.shape[d]);
    i = q;
    #pragma unroll
    for (int j = 0; j < K; ++j) o[j] += r * (int)ix.st[j][d];
  }
}
__device__ __forceinline__ void fg_offsets(const Ix& ix, i64 i, int k, i64* o) {
  for (int j = 0; j < k; ++j) o[j] = 0;
  for (int d = ix.nd - 1; d >= 0; --d) {
    i64 q = i % ix.shape[d];
    i = i / ix.shape[d];
    for (int j = 0; j < k; ++j) o[j] += q * ix.st[j][d];
  }
}
"#;

/// The C type of a dtype.
pub fn ctype(dt: DType) -> &'static str {
    match dt {
        DType::F32 => "float",
        DType::F64 => "double",
        DType::I64 => "i64",
        DType::Bool => "bool",
        DType::I32 => "i32",
        DType::I16 => "i16",
        DType::I8 => "i8",
        DType::U8 => "u8",
        DType::F16 => "fg_f16",
        DType::BF16 => "fg_bf16",
    }
}

/// Short name for kernel names.
pub fn tag(dt: DType) -> &'static str {
    match dt {
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::I64 => "i64",
        DType::Bool => "b8",
        DType::I32 => "i32",
        DType::I16 => "i16",
        DType::I8 => "i8",
        DType::U8 => "u8",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
    }
}

/// The expression of the copy kernel converting `from` (the compute type CT, read as `x`) to `to`,
/// with the CPU's results (Note [Storage and compute dtypes] in src/tensor/dtype.rs).
pub fn cast_expr(from: DType, to: DType) -> &'static str {
    match (from, to) {
        (_, DType::Bool) => "(x != (CT)0)",
        (f, DType::I8 | DType::I16 | DType::I32) if f.is_float() => "fg_f2i32((double)x)",
        (f, DType::I64 | DType::U8) if f.is_float() => "(i64)x",
        _ => "x",
    }
}

/// One operand of an elementwise kernel: a tensor (read through the index) or a scalar
/// parameter (a Python number or a CPU 0-d tensor).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Operand {
    Tensor(DType),
    Scalar,
}

/// Kernel name for an elementwise op.
pub fn elementwise_name(op: &str, out: DType, comp: DType, ins: &[Operand]) -> String {
    let mut s = format!("ew_{op}_{}_{}", tag(out), tag(comp));
    for o in ins {
        s.push('_');
        s.push_str(match o {
            Operand::Tensor(d) => tag(*d),
            Operand::Scalar => "s",
        });
    }
    s
}

/// An elementwise kernel: out = (OUT)(expr), where the expression reads the operands as `x`, `y`,
/// `z` in the compute type `CT`. Parameters: n, Ix, out, three input pointers, three scalars.
/// Contiguous operands (ix.contig) skip the index arithmetic; a thread then loads all of its
/// FG_UNROLL elements before it computes any (loads in flight). Strided operands take 32-bit
/// offsets with magic-number division when they fit (ix.fast32), 64-bit arithmetic otherwise.
pub fn elementwise(name: &str, out: DType, comp: DType, ins: &[Operand], expr: &str) -> String {
    let vars = ["x", "y", "z"];
    let mut loads = String::new();
    let mut params = String::new();
    let mut tile_decl = String::new();
    let mut tile_load = String::new();
    let mut tile_load32 = String::new();
    let mut tile_use = String::new();
    for k in 0..3 {
        match ins.get(k) {
            Some(Operand::Tensor(d)) => {
                params.push_str(&format!(", const {}* __restrict__ a{k}", ctype(*d)));
                loads.push_str(&format!("    CT {} = (CT)a{k}[p[{}]];\n", vars[k], k + 1));
                // `where`'s condition is read by the expression itself (a0[p[1]])
                if !(k == 0 && expr.contains("a0[")) {
                    tile_decl.push_str(&format!("      CT t{k}[FG_UNROLL];\n"));
                    tile_load.push_str(&format!("        t{k}[u] = (CT)a{k}[base + (i64)u * blockDim.x];\n"));
                    tile_load32.push_str(&format!("          t{k}[u] = (CT)a{k}[pp[u][{}]];\n", k + 1));
                    tile_use.push_str(&format!("        CT {} = t{k}[u];\n", vars[k]));
                }
            }
            Some(Operand::Scalar) => {
                params.push_str(&format!(", const void* a{k}"));
                loads.push_str(&format!("    CT {} = (CT)s{k};\n", vars[k]));
                tile_use.push_str(&format!("        CT {} = (CT)s{k};\n", vars[k]));
            }
            None => params.push_str(&format!(", const void* a{k}")),
        }
    }
    let nops = 1 + ins.len();
    format!(
        r#"{PRELUDE}
typedef {ct} CT;
extern "C" __global__ void {name}(i64 n, Ix ix, {ot}* __restrict__ out{params}, double s0, double s1, double s2) {{
  i64 step = (i64)gridDim.x * blockDim.x * FG_UNROLL;
  if (ix.contig) {{
    // Contiguous operands: FG_UNROLL elements per thread, a warp's accesses coalesced.
    for (i64 base = (i64)blockIdx.x * blockDim.x * FG_UNROLL + threadIdx.x; base < n; base += step) {{
      if (base + (i64)(FG_UNROLL - 1) * blockDim.x < n) {{
{tile_decl}        #pragma unroll
        for (int u = 0; u < FG_UNROLL; ++u) {{
{tile_load}        }}
        #pragma unroll
        for (int u = 0; u < FG_UNROLL; ++u) {{
          i64 i = base + (i64)u * blockDim.x;
          i64 p[4] = {{i, i, i, i}};
          (void)p;
{tile_use}          out[i] = ({ot})({expr});
        }}
        continue;
      }}
      for (int u = 0; u < FG_UNROLL; ++u) {{
        i64 i = base + (i64)u * blockDim.x;
        if (i < n) {{
          i64 p[4] = {{i, i, i, i}};
{loads}          out[i] = ({ot})({expr});
        }}
      }}
    }}
    return;
  }}
  if (ix.fast32) {{
    for (i64 base = (i64)blockIdx.x * blockDim.x * FG_UNROLL + threadIdx.x; base < n; base += step) {{
      if (base + (i64)(FG_UNROLL - 1) * blockDim.x < n) {{
        // a full tile: every offset and load first, then the math and the stores
        int pp[FG_UNROLL][{nops}];
{tile_decl}        #pragma unroll
        for (int u = 0; u < FG_UNROLL; ++u) {{
          fg_offsets32<{nops}>(ix, (unsigned)(base + (i64)u * blockDim.x), pp[u]);
{tile_load32}        }}
        #pragma unroll
        for (int u = 0; u < FG_UNROLL; ++u) {{
          int p[{nops}];
          #pragma unroll
          for (int k = 0; k < {nops}; ++k) p[k] = pp[u][k];
{tile_use}          out[p[0]] = ({ot})({expr});
        }}
        continue;
      }}
      #pragma unroll
      for (int u = 0; u < FG_UNROLL; ++u) {{
        i64 i = base + (i64)u * blockDim.x;
        if (i < n) {{
          int p[{nops}];
          fg_offsets32<{nops}>(ix, (unsigned)i, p);
{loads}          out[p[0]] = ({ot})({expr});
        }}
      }}
    }}
    return;
  }}
  for (i64 base = (i64)blockIdx.x * blockDim.x * FG_UNROLL + threadIdx.x; base < n; base += step) {{
    #pragma unroll
    for (int u = 0; u < FG_UNROLL; ++u) {{
      i64 i = base + (i64)u * blockDim.x;
      if (i < n) {{
        i64 p[4];
        fg_offsets(ix, i, 4, p);
{loads}        out[p[0]] = ({ot})({expr});
      }}
    }}
  }}
}}
"#,
        ct = ctype(comp),
        ot = ctype(out),
    )
}

// The CUDA expressions of the op table's rows (src/ops/table.rs): read from the rows' `cuda`
// column through the table's X-macros (tokens only: the backend does not depend on the ops).

/// (kernel name, expression) of each unary row (`float_unary_ops!`, `num_unary_ops!`).
macro_rules! unary_row_exprs {
    ($($name:ident $(as $tn:literal)?: grad $gf:literal, alias [$($al:ident),*], special [$($sp:literal),*], cuda $cuda:tt, autocast $ac:ident, inplace $ip:ident $($ipgf:literal)?, bind $bind:ident $($flag:ident)*, saves $save:ident,
        kernel $k:tt, backward $b:tt, lane $l:tt;)*) => {
        &[$((stringify!($name), crate::__op_cuda!($cuda))),*]
    };
}

/// (name, family, expression) of each row with a hand-written forward (`other_ops!`).
macro_rules! other_row_exprs {
    ($($name:ident: family $fam:ident, grad $gf:literal, alias [$($al:ident),*], special [$($sp:literal),*], domain $dom:ident, cuda $cuda:tt, autocast $ac:ident, inplace $ip:ident, out $out:literal, bind $bind:ident $f:tt;)*) => {
        &[$((stringify!($name), stringify!($fam), crate::__op_cuda!($cuda))),*]
    };
}

/// The float unary rows: float32/float64 kernels, float16/bfloat16 computing in float32.
const FLOAT_UNARY: &[(&str, Option<&str>)] = crate::float_unary_ops!(unary_row_exprs);
/// The integer-keeping unary rows: float32/float64/int64 kernels, and the 16-bit floats.
const NUM_UNARY: &[(&str, Option<&str>)] = crate::num_unary_ops!(unary_row_exprs);
const OTHER: &[(&str, &str, Option<&str>)] = crate::other_ops!(other_row_exprs);

/// (kernel name, expression) of each float binary row (`float_binary_ops!`).
macro_rules! float_binary_row_exprs {
    ($($name:ident $(as $tn:literal)?: grad $gf:literal, alias [$($al:ident),*], special [$($sp:literal),*], domain $dom:ident, cuda $cuda:tt, autocast $ac:ident, inplace $ip:ident, bind $bind:ident $($flag:ident)*,
        kernel $k:tt, grad_self $ga:tt, grad_other $gb:tt;)*) => {
        &[$((stringify!($name), crate::__op_cuda!($cuda))),*]
    };
}
/// The float binary rows: float32/float64 kernels, float16/bfloat16 computing in float32.
const FLOAT_BINARY: &[(&str, Option<&str>)] = crate::float_binary_ops!(float_binary_row_exprs);

const UNARY_FAMILIES: &[&str] = &["Unary", "Predicate", "LogicalUnary"];
const BINARY_FAMILIES: &[&str] = &["Binary", "FloatBinary", "Comparison", "Logical"];

/// The table's rows of `families` that have a CUDA expression.
fn other_rows(families: &'static [&'static str]) -> impl Iterator<Item = (&'static str, &'static str)> {
    OTHER.iter().filter(move |(_, f, _)| families.contains(f)).filter_map(|&(n, _, e)| Some((n, e?)))
}

/// Expression of a unary op over `x` (compute type = the output's float or integer type): the
/// table's `cuda` column, and the cast kernel (`copy`).
pub fn unary_expr(op: &str) -> Option<&'static str> {
    if op == "copy" {
        return Some("x");
    }
    FLOAT_UNARY.iter().chain(NUM_UNARY).find(|(n, _)| *n == op).and_then(|(_, e)| *e).or_else(|| other_rows(UNARY_FAMILIES).find(|(n, _)| *n == op).map(|(_, e)| e))
}

/// Expression of a binary op over `x`, `y`: the table's `cuda` column, and the kernels that are
/// not ops of their own (bool add/mul, add with alpha, the fused backward kernels).
pub fn binary_expr(op: &str) -> Option<&'static str> {
    if let Some((_, e)) = other_rows(BINARY_FAMILIES).find(|(n, _)| *n == op) {
        return Some(e);
    }
    if let Some(&(_, e)) = FLOAT_BINARY.iter().find(|(n, _)| *n == op) {
        return e;
    }
    Some(match op {
        "or" => "(x || y)",
        "and" => "(x && y)",
        // a + alpha * b with alpha in z (a scalar)
        "add_alpha" => "x + z * y",
        _ => return backward_expr(op),
    })
}

/// The fused backward kernels (g, s) -> g * f'(s) (`fused` in elementwise.rs).
const BACKWARD_KERNELS: &[(&str, &str)] = &[
    // threshold_backward(g, y): g where y > 0
    ("threshold_backward", "(y <= (CT)0 ? (CT)0 : x)"),
    ("tanh_backward", "x * ((CT)1 - y * y)"),
    ("sigmoid_backward", "x * y * ((CT)1 - y)"),
    ("sqrt_backward", "x / ((CT)2 * y)"),
    ("reciprocal_backward", "-x * y * y"),
];

fn backward_expr(op: &str) -> Option<&'static str> {
    BACKWARD_KERNELS.iter().find(|(n, _)| *n == op).map(|(_, e)| *e)
}

/// Reduction kernel over the last axis of a contiguous [rows, r] buffer, one block per row.
/// `kind`: sum, prod, max, min, all, any (values) or argmax, argmin (int64 positions).
pub fn reduce(name: &str, kind: &str, inp: DType, out: DType) -> String {
    let (acc, init, comb) = match kind {
        "sum" => (if inp == DType::I64 || inp == DType::Bool { "i64" } else { "double" }, "0", "a + b"),
        "prod" => (if inp == DType::I64 { "i64" } else { "double" }, "1", "a * b"),
        "max" => (ctype(inp), "first", "fg_max(a, b)"),
        "min" => (ctype(inp), "first", "fg_min(a, b)"),
        "all" => ("bool", "true", "a && b"),
        "any" => ("bool", "false", "a || b"),
        _ => ("", "", ""),
    };
    if kind == "argmax" || kind == "argmin" {
        let better = if kind == "argmax" { "v > bv" } else { "v < bv" };
        return format!(
            r#"{PRELUDE}
typedef {it} T;
// The first position of the extreme value; the first NaN wins (as the CPU kernel and torch).
__device__ __forceinline__ bool fg_better(T v, i64 i, T bv, i64 bi) {{
  bool vn = fg_isnan(v), bn = fg_isnan(bv);
  if (bn && vn) return i < bi;
  if (bn) return false;
  if (vn) return true;
  if ({better}) return true;
  return v == bv && i < bi;
}}
extern "C" __global__ void {name}(i64 rows, i64 r, i64 nch, const T* __restrict__ x, i64* __restrict__ out) {{
  __shared__ T sv[256];
  __shared__ i64 si[256];
  for (i64 row = blockIdx.y; row < rows; row += gridDim.y) {{
    const T* s = x + row * r;
    T bv = s[0]; i64 bi = 0;
    for (i64 i = threadIdx.x; i < r; i += blockDim.x) {{
      T v = s[i];
      if (fg_better(v, i, bv, bi)) {{ bv = v; bi = i; }}
    }}
    sv[threadIdx.x] = bv; si[threadIdx.x] = bi;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {{
      if (threadIdx.x < w && fg_better(sv[threadIdx.x + w], si[threadIdx.x + w], sv[threadIdx.x], si[threadIdx.x])) {{
        sv[threadIdx.x] = sv[threadIdx.x + w]; si[threadIdx.x] = si[threadIdx.x + w];
      }}
      __syncthreads();
    }}
    if (threadIdx.x == 0) out[row] = si[0];
    __syncthreads();
  }}
}}
"#,
            it = ctype(inp)
        );
    }
    let init_expr = if init == "first" { "(ACC)s[lo < r ? lo : 0]".to_string() } else { format!("(ACC){init}") };
    format!(
        r#"{PRELUDE}
typedef {it} T;
typedef {acc} ACC;
__device__ __forceinline__ ACC fg_comb(ACC a, ACC b) {{ return {comb}; }}
// Row `row` is cut into `nch` chunks (blockIdx.x); each block reduces one chunk of one row into
// out[row * nch + chunk]. nch = 1 reduces whole rows; a second launch combines the chunks.
extern "C" __global__ void {name}(i64 rows, i64 r, i64 nch, const T* __restrict__ x, {ot}* __restrict__ out) {{
  __shared__ ACC sh[256];
  i64 per = (r + nch - 1) / nch;
  for (i64 row = blockIdx.y; row < rows; row += gridDim.y) {{
    for (i64 c = blockIdx.x; c < nch; c += gridDim.x) {{
      const T* s = x + row * r;
      i64 lo = c * per, hi = lo + per < r ? lo + per : r;
      // eight independent accumulators per thread: loads in flight instead of one dependent chain
      ACC a[8];
      #pragma unroll
      for (int k = 0; k < 8; ++k) a[k] = {init_expr};
      i64 i = lo + threadIdx.x, bd = blockDim.x;
      for (; i + 7 * bd < hi; i += 8 * bd) {{
        T v[8];
        #pragma unroll
        for (int k = 0; k < 8; ++k) v[k] = s[i + k * bd];
        #pragma unroll
        for (int k = 0; k < 8; ++k) a[k] = fg_comb(a[k], (ACC)v[k]);
      }}
      for (; i < hi; i += bd) a[0] = fg_comb(a[0], (ACC)s[i]);
      ACC t = fg_comb(fg_comb(fg_comb(a[0], a[1]), fg_comb(a[2], a[3])), fg_comb(fg_comb(a[4], a[5]), fg_comb(a[6], a[7])));
      // the block's total: within each warp by shuffles, then the warps' totals in warp 0
      int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
      #pragma unroll
      for (int o = 16; o > 0; o >>= 1) t = fg_comb(t, fg_shfl(t, o));
      if (lane == 0) sh[warp] = t;
      __syncthreads();
      if (warp == 0) {{
        t = sh[lane < nw ? lane : 0];
        for (int o = 16; o > 0; o >>= 1) {{
          ACC u = fg_shfl(t, o);
          if (lane + o < nw) t = fg_comb(t, u);
        }}
        if (lane == 0) sh[0] = t;
      }}
      __syncthreads();
      if (threadIdx.x == 0) out[row * nch + c] = ({ot})sh[0];
      __syncthreads();
    }}
  }}
}}
"#,
        it = ctype(inp),
        ot = ctype(out),
    )
}

/// Row-wise softmax / log_softmax over the last axis of a contiguous [rows, r] buffer.
pub fn softmax(name: &str, dt: DType, log: bool) -> String {
    let fin = if log { "(T)((double)s[i] - mx - lse)" } else { "(T)(exp((double)s[i] - mx) / tot)" };
    format!(
        r#"{PRELUDE}
typedef {t} T;
extern "C" __global__ void {name}(i64 rows, i64 r, const T* __restrict__ x, T* __restrict__ out) {{
  __shared__ double sh[256];
  for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {{
    const T* s = x + row * r;
    T* o = out + row * r;
    double m = -1.0 / 0.0;
    bool nan = false;
    for (i64 i = threadIdx.x; i < r; i += blockDim.x) {{ double v = (double)s[i]; if (v != v) nan = true; m = v > m ? v : m; }}
    sh[threadIdx.x] = nan ? (0.0 / 0.0) : m;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {{
      if (threadIdx.x < w) {{ double a = sh[threadIdx.x], b = sh[threadIdx.x + w]; sh[threadIdx.x] = (a != a || b != b) ? (0.0 / 0.0) : (a > b ? a : b); }}
      __syncthreads();
    }}
    // An infinite max makes the row NaN (inf - inf), as the composed CPU path and torch.
    double mx = sh[0];
    __syncthreads();
    double acc = 0.0;
    for (i64 i = threadIdx.x; i < r; i += blockDim.x) acc += exp((double)s[i] - mx);
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {{
      if (threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
      __syncthreads();
    }}
    double tot = sh[0];
    double lse = log(tot);
    __syncthreads();
    for (i64 i = threadIdx.x; i < r; i += blockDim.x) o[i] = {fin};
  }}
}}
"#,
        t = ctype(dt)
    )
}

/// Gather along one axis of contiguous buffers viewed as [outer, n_in, inner] -> [outer, n_idx, inner]
/// (index_select, embedding) and its adjoint, index_add into [outer, n_out, inner] (atomic).
pub fn index_select(name: &str, dt: DType, add: bool) -> String {
    let body = if add {
        // out[o, idx[j], i] += src[o, j, i]
        "atomicAdd(&out[(o * nsel + idx[j]) * inner + i], src[t]);"
    } else {
        "out[t] = src[(o * nsel + idx[j]) * inner + i];"
    };
    format!(
        r#"{PRELUDE}
typedef {t} T;
extern "C" __global__ void {name}(i64 total, i64 nidx, i64 nsel, i64 inner, const i64* __restrict__ idx, const T* __restrict__ src, T* __restrict__ out) {{
  i64 step = (i64)blockDim.x * gridDim.x;
  for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += step) {{
    i64 i = t % inner; i64 j = (t / inner) % nidx; i64 o = t / (inner * nidx);
    {body}
  }}
}}
"#,
        t = ctype(dt)
    )
}

/// Fused Adam/AdamW step over contiguous float buffers.
pub fn adam(name: &str, dt: DType) -> String {
    format!(
        r#"{PRELUDE}
typedef {t} T;
extern "C" __global__ void {name}(i64 n, T* __restrict__ p, const T* __restrict__ g, T* __restrict__ m, T* __restrict__ v,
    T* __restrict__ vmax, double lr, double b1, double b2, double eps, double wd, int decoupled, int maximize, double bc1, double bc2) {{
  i64 step = (i64)blockDim.x * gridDim.x;
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {{
    T gi = maximize ? -g[i] : g[i];
    T pi = p[i];
    if (wd != 0.0) {{ if (decoupled) pi = pi * (T)(1.0 - lr * wd); else gi = gi + (T)wd * pi; }}
    T mi = m[i] + (gi - m[i]) * (T)(1.0 - b1);
    T vi = v[i] * (T)b2 + gi * gi * (T)(1.0 - b2);
    m[i] = mi; v[i] = vi;
    if (vmax) {{ vi = fg_max(vmax[i], vi); vmax[i] = vi; }}  // amsgrad
    T denom = (T)(sqrt((double)vi) / sqrt(bc2)) + (T)eps;
    p[i] = pi - (T)(lr / bc1) * mi / denom;
  }}
}}
"#,
        t = ctype(dt)
    )
}

/// im2col ([P, H, W] planes -> [P, kh*kw, L] columns, zeros where the window reads padding) and
/// col2im (the adjoint: each pixel sums the column entries that read it, in the same (ki, kj)
/// order as the CPU kernel, so the float roundings match). `g`: P, H, W, kh, kw, sh, sw, ph, pw,
/// dh, dw, oh, ow.
pub fn im2col(name: &str, dt: DType, adjoint: bool) -> String {
    let body = if adjoint {
        r#"  i64 total = g.v[0] * H * W;
  for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += (i64)blockDim.x * gridDim.x) {
    i64 xw = t % W, yh = (t / W) % H, p = t / (H * W);
    T acc = (T)0;
    for (i64 ki = 0; ki < kh; ++ki) {
      i64 hi = yh + ph - ki * dh;
      if (hi < 0 || hi % sh != 0 || hi / sh >= oh) continue;
      for (i64 kj = 0; kj < kw; ++kj) {
        i64 wj = xw + pw - kj * dw;
        if (wj < 0 || wj % sw != 0 || wj / sw >= ow) continue;
        acc = (T)((double)acc + (double)src[(p * kh * kw + ki * kw + kj) * L + (hi / sh) * ow + wj / sw]);
      }
    }
    out[t] = acc;
  }"#
    } else {
        r#"  i64 total = g.v[0] * kh * kw * L;
  for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < total; t += (i64)blockDim.x * gridDim.x) {
    i64 l = t % L, row = (t / L) % (kh * kw), p = t / (L * kh * kw);
    i64 ki = row / kw, kj = row % kw, oi = l / ow, oj = l % ow;
    i64 hi = oi * sh + ki * dh - ph, wj = oj * sw + kj * dw - pw;
    out[t] = (hi >= 0 && hi < H && wj >= 0 && wj < W) ? src[(p * H + hi) * W + wj] : (T)0;
  }"#
    };
    format!(
        r#"{PRELUDE}
typedef {t} T;
struct Win {{ i64 v[13]; }};
extern "C" __global__ void {name}(Win g, const T* __restrict__ src, T* __restrict__ out) {{
  i64 H = g.v[1], W = g.v[2], kh = g.v[3], kw = g.v[4], sh = g.v[5], sw = g.v[6], ph = g.v[7], pw = g.v[8];
  i64 dh = g.v[9], dw = g.v[10], oh = g.v[11], ow = g.v[12], L = oh * ow;
{body}
}}
"#,
        t = ctype(dt)
    )
}

/// The counter-based generator's mixing function (splitmix64's finaliser).
const MIX: &str = r#"
__device__ __forceinline__ unsigned long long fg_mix(unsigned long long z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
// Draw c of the stream `seed`: SplitMix64's output for state seed + (c + 1) * golden ratio.
__device__ __forceinline__ unsigned long long fg_draw(unsigned long long seed, unsigned long long c) {
  return fg_mix(seed + c * 0x9e3779b97f4a7c15ULL);
}
"#;

/// Uniform [0, 1) or standard normal samples from a counter-based generator (SplitMix64: draw c
/// is the mix of seed + c * golden ratio), so element i's value depends only on (seed, i) and a
/// seed drawn from the global generator makes device random numbers reproducible under
/// manual_seed. float32 takes two 24-bit uniforms from each 64-bit draw; normal samples come in
/// Box-Muller pairs (thread k writes elements 2k, 2k + 1) in the output's precision.
pub fn random(name: &str, dt: DType, normal: bool) -> String {
    let f32 = dt == DType::F32;
    let body = match (normal, f32) {
        (true, true) => in_pairs(
            "float2",
            r#"    unsigned long long a = fg_draw(seed, (unsigned long long)k);
    float u1 = 1.0f - (float)(a >> 40) * (1.0f / 16777216.0f);
    float u2 = (float)((a >> 16) & 0xffffffULL) * (1.0f / 16777216.0f);
    float r = sqrtf(-2.0f * logf(u1)), sn, c;
    sincospif(2.0f * u2, &sn, &c);"#,
            "r * c",
            "r * sn",
        ),
        (true, false) => in_pairs(
            "double2",
            r#"    unsigned long long a = fg_draw(seed, 2ULL * (unsigned long long)k), b = fg_draw(seed, 2ULL * (unsigned long long)k + 1ULL);
    double u1 = 1.0 - (double)(a >> 11) * (1.0 / 9007199254740992.0);
    double u2 = (double)(b >> 11) * (1.0 / 9007199254740992.0);
    double r = sqrt(-2.0 * log(u1)), sn, c;
    sincospi(2.0 * u2, &sn, &c);"#,
            "r * c",
            "r * sn",
        ),
        (false, true) => in_pairs(
            "float2",
            r#"    unsigned long long a = fg_draw(seed, (unsigned long long)k);
    float u = (float)(a >> 40) * (1.0f / 16777216.0f), w = (float)((a >> 16) & 0xffffffULL) * (1.0f / 16777216.0f);"#,
            "u",
            "w",
        ),
        (false, false) => r#"  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)blockDim.x * gridDim.x) {
    out[i] = (double)(fg_draw(seed, (unsigned long long)i) >> 11) * (1.0 / 9007199254740992.0);
  }"#
        .to_string(),
    };
    format!(
        r#"{PRELUDE}{MIX}
typedef {t} T;
extern "C" __global__ void {name}(i64 n, unsigned long long seed, T* __restrict__ out) {{
{body}
}}
"#,
        t = ctype(dt)
    )
}

/// A loop in which thread k computes two values (`draw`, then `first` and `second`) and stores them
/// at elements 2k and 2k + 1 as one `vec2` (the second dropped past the end).
fn in_pairs(vec2: &str, draw: &str, first: &str, second: &str) -> String {
    format!(
        r#"  for (i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x; 2 * k < n; k += (i64)blockDim.x * gridDim.x) {{
{draw}
    if (2 * k + 1 < n) {{ {vec2} v; v.x = {first}; v.y = {second}; *({vec2}*)(out + 2 * k) = v; }}
    else out[2 * k] = {first};
  }}"#
    )
}

/// Elements each thread of a `random` launch writes.
pub fn random_per_thread(dt: DType, normal: bool) -> usize {
    if normal || dt == DType::F32 {
        2
    } else {
        1
    }
}

/// Atomic adds for the scatter kernels (float, double, int64 as two's complement).
const ATOMIC_ADD: &str = r#"
__device__ __forceinline__ void fg_atomic_add(float* a, float v) { atomicAdd(a, v); }
__device__ __forceinline__ void fg_atomic_add(double* a, double v) { atomicAdd(a, v); }
__device__ __forceinline__ void fg_atomic_add(i64* a, i64 v) { atomicAdd((unsigned long long*)a, (unsigned long long)v); }
"#;

/// The dtypes whose scatter-add has a device atomic.
pub fn has_atomic_add(dt: DType) -> bool {
    matches!(dt, DType::F32 | DType::F64 | DType::I64)
}

/// Advanced indexing by precomputed offsets: element t of the result is row b = t / R, column
/// r = t % R; row b starts at base[b] in the source and column r sits at the rest layout's
/// offset of r (ix, operand 0). `mode`: "take" (out[t] = src[..]), "put" (dst[..] = vals[t]) or
/// "put_add" (dst[..] += vals[t], atomic).
pub fn take(name: &str, dt: DType, mode: &str) -> String {
    let body = match mode {
        "take" => "b[t] = a[base[row] + o[0]];",
        "put" => "b[base[row] + o[0]] = a[t];",
        _ => "fg_atomic_add(&b[base[row] + o[0]], a[t]);",
    };
    let atomics = if mode == "put_add" { ATOMIC_ADD } else { "" };
    format!(
        r#"{PRELUDE}{atomics}
typedef {t} T;
extern "C" __global__ void {name}(i64 n, i64 R, Ix ix, const i64* __restrict__ base, const T* __restrict__ a, T* __restrict__ b) {{
  for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (i64)blockDim.x * gridDim.x) {{
    i64 row = t / R, o[1];
    fg_offsets(ix, t - row * R, 1, o);
    {body}
  }}
}}
"#,
        t = ctype(dt)
    )
}

/// Most index tensors one device advanced-indexing launch takes (more: offsets from the host).
pub const MAXK: usize = 4;

/// The index of an advanced-indexing launch (matches `IxK` in native.rs): over the result's
/// shape, operand 0 holds the source/target's strides on the dims not indexed (0 on the index
/// dims), 1 the result's / values' strides, 2 + j index tensor j's strides on the index dims (0
/// elsewhere); index j picks along a dim of `size[j]` elements at stride `xst[j]`. `mul`/`shr`:
/// magic numbers as in Ix, used when `fast32`.
const IXK: &str = r#"
#define MAXK 4
struct IxK { i64 shape[MAXD]; i64 st[2 + MAXK][MAXD]; unsigned mul[MAXD]; unsigned shr[MAXD]; i64 size[MAXK]; i64 xst[MAXK]; const i64* idx[MAXK]; int nd; int k; int fast32; int pad; };
"#;

/// Advanced indexing with the index tensors on the device, in one launch over the result (in its
/// final dim order): each element reads its k indices (negative ones wrapped), bounds-checks them
/// (out of range: *err = 1 and the element is skipped; the caller raises torch's error) and
/// copies from (`take`), writes to (`put`) or atomically adds to (`put_add`) the target; `check`
/// only checks (run over the index dims before a write, so a bad index writes nothing).
pub fn index_k(name: &str, dt: DType, mode: &str) -> String {
    // each element reads a[from] and writes (or adds to) b[to]; a check reads and writes nothing
    let (from, to, store) = match mode {
        "take" => ("off", "o[1]", "b[to[u]] = v[u];"),
        "put" => ("o[1]", "off", "b[to[u]] = v[u];"),
        "put_add" => ("o[1]", "off", "fg_atomic_add(&b[to[u]], v[u]);"),
        _ => ("0", "0", ""),
    };
    let load = if mode == "check" { "" } else { "v[u] = a[from[u]];" };
    let atomics = if mode == "put_add" { ATOMIC_ADD } else { "" };
    let element = format!(
        r#"      i64 o[2 + MAXK];
      if (ix.fast32) {{
        int q[2 + MAXK];
        #pragma unroll
        for (int j = 0; j < 2 + MAXK; ++j) q[j] = 0;
        unsigned i = (unsigned)t;
        for (int d = ix.nd - 1; d >= 0; --d) {{
          unsigned s = (__umulhi(i, ix.mul[d]) + i) >> ix.shr[d];
          int r = (int)(i - s * (unsigned)ix.shape[d]);
          i = s;
          #pragma unroll
          for (int j = 0; j < 2 + MAXK; ++j) if (j < 2 + ix.k) q[j] += r * (int)ix.st[j][d];
        }}
        #pragma unroll
        for (int j = 0; j < 2 + MAXK; ++j) o[j] = q[j];
      }} else {{
        #pragma unroll
        for (int j = 0; j < 2 + MAXK; ++j) o[j] = 0;
        i64 i = t;
        for (int d = ix.nd - 1; d >= 0; --d) {{
          i64 r = i % ix.shape[d];
          i = i / ix.shape[d];
          #pragma unroll
          for (int j = 0; j < 2 + MAXK; ++j) if (j < 2 + ix.k) o[j] += r * ix.st[j][d];
        }}
      }}
      i64 off = o[0];
      bool ok = true;
      #pragma unroll
      for (int j = 0; j < MAXK; ++j) {{
        if (j < ix.k) {{
          i64 w = ix.idx[j][o[2 + j]];
          if (w < 0) w += ix.size[j];
          if (w < 0 || w >= ix.size[j]) ok = false;
          off += w * ix.xst[j];
        }}
      }}
      if (!ok) {{ *err = 1; live[u] = false; continue; }}
      from[u] = {from}; to[u] = {to};"#
    );
    format!(
        r#"{PRELUDE}{atomics}{IXK}
typedef {t} T;
extern "C" __global__ void {name}(i64 n, IxK ix, const T* __restrict__ a, T* __restrict__ b, int* __restrict__ err) {{
{body}
}}
"#,
        t = ctype(dt),
        body = unrolled_moves(&element, load, store)
    )
}

/// The loop of the indexing kernels over `n` elements: FG_UNROLL elements per thread, a block's
/// width apart; `element` (with `t`, the element, and `u`, its slot) sets `from[u]`/`to[u]` or
/// clears `live[u]`; then every live slot's `load` (into `v[u]`), then every `store`, so the
/// memory requests of all slots are in flight together.
fn unrolled_moves(element: &str, load: &str, store: &str) -> String {
    format!(
        r#"  for (i64 t0 = (i64)blockIdx.x * blockDim.x * FG_UNROLL + threadIdx.x; t0 < n; t0 += (i64)blockDim.x * gridDim.x * FG_UNROLL) {{
    i64 from[FG_UNROLL], to[FG_UNROLL];
    bool live[FG_UNROLL];
    #pragma unroll
    for (int u = 0; u < FG_UNROLL; ++u) {{
      i64 t = t0 + (i64)u * blockDim.x;
      live[u] = t < n;
      from[u] = 0; to[u] = 0;
      if (!live[u]) continue;
{element}
    }}
    T v[FG_UNROLL];
    #pragma unroll
    for (int u = 0; u < FG_UNROLL; ++u) if (live[u]) {{ {load} }}
    #pragma unroll
    for (int u = 0; u < FG_UNROLL; ++u) if (live[u]) {{ {store} }}
  }}"#
    )
}

/// nonzero's two passes over a contiguous bool buffer, in chunks of NZ_T * NZ_R elements (one per
/// block): `nz_count` writes each chunk's count of true elements; after an inclusive scan of the
/// counts, `nz_write` writes each true element's coordinates (row-major over `shape`, `nd` of
/// them) at its rank: the chunk's start plus its rank in the chunk, found round by round with warp
/// ballots, so the order is the flat order.
pub const NZ_CHUNK: usize = 4096;
pub fn nonzero_kernels() -> String {
    format!(
        r#"{PRELUDE}
#define NZ_T 256
#define NZ_R 16
struct Shp {{ i64 s[MAXD]; }};
extern "C" __global__ void nz_count(i64 n, const unsigned char* __restrict__ m, i64* __restrict__ counts) {{
  __shared__ int tot[NZ_T / 32];
  i64 base = (i64)blockIdx.x * (NZ_T * NZ_R);
  int c = 0;
  #pragma unroll
  for (int r = 0; r < NZ_R; ++r) {{
    i64 i = base + r * NZ_T + threadIdx.x;
    if (i < n && m[i]) ++c;
  }}
  for (int o = 16; o > 0; o >>= 1) c += __shfl_down_sync(0xffffffffu, c, o);
  if ((threadIdx.x & 31) == 0) tot[threadIdx.x >> 5] = c;
  __syncthreads();
  if (threadIdx.x == 0) {{
    int s = 0;
    for (int w = 0; w < NZ_T / 32; ++w) s += tot[w];
    counts[blockIdx.x] = s;
  }}
}}
extern "C" __global__ void nz_write(i64 n, const unsigned char* __restrict__ m, const i64* __restrict__ incl, int nd, Shp shp, i64* __restrict__ out) {{
  __shared__ int wtot[NZ_T / 32];
  __shared__ int woff[NZ_T / 32 + 1];
  i64 base = (i64)blockIdx.x * (NZ_T * NZ_R);
  i64 pos = blockIdx.x == 0 ? 0 : incl[blockIdx.x - 1];
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  for (int r = 0; r < NZ_R; ++r) {{
    i64 i = base + r * NZ_T + threadIdx.x;
    bool f = i < n && m[i];
    unsigned bal = __ballot_sync(0xffffffffu, f);
    if (lane == 0) wtot[w] = __popc(bal);
    __syncthreads();
    if (threadIdx.x == 0) {{
      int s = 0;
      for (int v = 0; v < NZ_T / 32; ++v) {{ woff[v] = s; s += wtot[v]; }}
      woff[NZ_T / 32] = s;
    }}
    __syncthreads();
    if (f) {{
      i64 p = (pos + woff[w] + __popc(bal & ((1u << lane) - 1u))) * nd;
      i64 rem = i;
      for (int d = nd - 1; d >= 0; --d) {{
        i64 q = rem / shp.s[d];
        out[p + d] = rem - q * shp.s[d];
        rem = q;
      }}
    }}
    pos += woff[NZ_T / 32];
    __syncthreads();
  }}
}}
"#
    )
}

/// gather / scatter-add along one dim with the index on the device: over the index's shape,
/// operand 0 of `ix` is the values' layout (gather: the contiguous result; scatter: the source),
/// 1 the index's, 2 the target's with the indexed dim's stride zeroed (the index supplies it,
/// times `dstride`). An index outside [0, size) sets *err and is skipped (the caller raises).
pub fn gather_dim(name: &str, dt: DType, scatter_add: bool) -> String {
    // gather reads dst and writes vals; scatter-add reads vals and adds into dst
    let (load, store) = if scatter_add { ("v[u] = vals[from[u]];", "fg_atomic_add(&dst[to[u]], v[u]);") } else { ("v[u] = dst[from[u]];", "vals[to[u]] = v[u];") };
    let (vo, xo) = if scatter_add { ("from", "to") } else { ("to", "from") };
    let (cv, cd) = if scatter_add { ("const ", "") } else { ("", "const ") };
    let atomics = if scatter_add { ATOMIC_ADD } else { "" };
    let element = format!(
        r#"      i64 p[3];
      if (ix.fast32) {{
        int q[3];
        fg_offsets32<3>(ix, (unsigned)t, q);
        p[0] = q[0]; p[1] = q[1]; p[2] = q[2];
      }} else {{
        fg_offsets(ix, t, 3, p);
      }}
      i64 w = idx[p[1]];
      if (w < 0 || w >= size) {{ *err = 1; live[u] = false; continue; }}
      {vo}[u] = p[0]; {xo}[u] = p[2] + w * dstride;"#
    );
    format!(
        r#"{PRELUDE}{atomics}
typedef {t} T;
extern "C" __global__ void {name}(i64 n, Ix ix, i64 dstride, i64 size, const i64* __restrict__ idx, {cv}T* __restrict__ vals, {cd}T* __restrict__ dst, int* __restrict__ err) {{
{body}
}}
"#,
        t = ctype(dt),
        body = unrolled_moves(&element, load, store)
    )
}

/// Inclusive scan (cumsum) along the middle axis of a contiguous [outer, n, inner] buffer, in
/// `ACC` (double for floats, int64 for integers). inner == 1: a block per row scans blockDim-long
/// pieces in shared memory, carrying the running total; inner > 1: a thread per (outer, inner)
/// column walks the axis (consecutive threads read consecutive elements).
pub fn scan(name: &str, dt: DType) -> String {
    let acc = if dt.is_float() { "double" } else { "i64" };
    format!(
        r#"{PRELUDE}
typedef {t} T;
typedef {acc} ACC;
extern "C" __global__ void {name}(i64 outer, i64 n, i64 inner, const T* __restrict__ x, T* __restrict__ out) {{
  if (inner == 1) {{
    __shared__ ACC sh[256];
    for (i64 row = blockIdx.x; row < outer; row += gridDim.x) {{
      const T* s = x + row * n;
      T* o = out + row * n;
      ACC carry = (ACC)0;
      for (i64 c = 0; c < n; c += blockDim.x) {{
        i64 i = c + threadIdx.x;
        ACC v = i < n ? (ACC)s[i] : (ACC)0;
        sh[threadIdx.x] = v;
        __syncthreads();
        for (int w = 1; w < blockDim.x; w <<= 1) {{
          ACC add = threadIdx.x >= w ? sh[threadIdx.x - w] : (ACC)0;
          __syncthreads();
          sh[threadIdx.x] += add;
          __syncthreads();
        }}
        if (i < n) o[i] = (T)(carry + sh[threadIdx.x]);
        carry += sh[blockDim.x - 1];
        __syncthreads();
      }}
    }}
    return;
  }}
  i64 cols = outer * inner;
  for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < cols; t += (i64)blockDim.x * gridDim.x) {{
    i64 oi = t / inner, ii = t - oi * inner;
    const T* s = x + oi * n * inner + ii;
    T* o = out + oi * n * inner + ii;
    ACC a = (ACC)0;
    for (i64 j = 0; j < n; ++j) {{ a += (ACC)s[j * inner]; o[j * inner] = (T)a; }}
  }}
}}
"#,
        t = ctype(dt)
    )
}

/// Integers uniform in [low, low + range) from the counter-based generator of `random`
/// (multiply-high of a 64-bit draw by the range), stored as `dt`.
pub fn randint(name: &str, dt: DType) -> String {
    format!(
        r#"{PRELUDE}{MIX}
typedef {t} T;
// A range below 2^32 takes two draws of 32 bits from each 64-bit draw (thread k writes elements
// 2k and 2k + 1); a wider one takes a 64-bit draw per element.
extern "C" __global__ void {name}(i64 n, unsigned long long seed, i64 low, unsigned long long range, T* __restrict__ out) {{
  if (range <= 0xffffffffULL) {{
    for (i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x; 2 * k < n; k += (i64)blockDim.x * gridDim.x) {{
      unsigned long long a = fg_draw(seed, (unsigned long long)k);
      out[2 * k] = (T)(low + (i64)(((a >> 32) * range) >> 32));
      if (2 * k + 1 < n) out[2 * k + 1] = (T)(low + (i64)(((a & 0xffffffffULL) * range) >> 32));
    }}
    return;
  }}
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)blockDim.x * gridDim.x) {{
    unsigned long long a = fg_draw(seed, (unsigned long long)i);
    out[i] = (T)(low + (i64)__umul64hi(a, range));
  }}
}}
"#,
        t = ctype(dt)
    )
}

/// Fused SGD step (momentum, dampening, Nesterov, weight decay, maximize) over contiguous
/// buffers; `first`: the momentum buffer is new (it takes the gradient).
pub fn sgd(name: &str, dt: DType) -> String {
    format!(
        r#"{PRELUDE}
typedef {t} T;
extern "C" __global__ void {name}(i64 n, T* __restrict__ p, const T* __restrict__ g, T* __restrict__ buf,
    double lr, double momentum, double dampening, double wd, int nesterov, int maximize, int first) {{
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)blockDim.x * gridDim.x) {{
    T pi = p[i];
    T gi = maximize ? -g[i] : g[i];
    if (wd != 0.0) gi = gi + (T)wd * pi;
    if (momentum != 0.0) {{
      T b = first ? gi : buf[i] * (T)momentum + (T)(1.0 - dampening) * gi;
      buf[i] = b;
      gi = nesterov ? gi + (T)momentum * b : b;
    }}
    p[i] = pi + (T)(-lr) * gi;
  }}
}}
"#,
        t = ctype(dt)
    )
}

/// Fused RMSprop step (weight decay, momentum, centered, maximize) over contiguous buffers.
pub fn rmsprop(name: &str, dt: DType) -> String {
    format!(
        r#"{PRELUDE}
typedef {t} T;
extern "C" __global__ void {name}(i64 n, T* __restrict__ p, const T* __restrict__ g, T* __restrict__ sq, T* __restrict__ mb, T* __restrict__ ga,
    double lr, double alpha, double eps, double wd, double momentum, int centered, int maximize) {{
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)blockDim.x * gridDim.x) {{
    T pi = p[i];
    T gi = maximize ? -g[i] : g[i];
    if (wd != 0.0) gi = gi + (T)wd * pi;
    T s = sq[i] * (T)alpha + (T)(1.0 - alpha) * gi * gi;
    sq[i] = s;
    T avg;
    if (centered) {{
      // torch's lerp: a + w (b - a) for |w| < 0.5, else b - (b - a)(1 - w)
      T w = (T)(1.0 - alpha), m = ga[i];
      m = (w < (T)0.5 && w > (T)-0.5) ? m + w * (gi - m) : gi - (gi - m) * ((T)1 - w);
      ga[i] = m;
      avg = (T)sqrt((double)(s - m * m)) + (T)eps;
    }} else {{
      avg = (T)sqrt((double)s) + (T)eps;
    }}
    if (momentum > 0.0) {{
      T b = mb[i] * (T)momentum + gi / avg;
      mb[i] = b;
      p[i] = pi + (T)(-lr) * b;
    }} else {{
      p[i] = pi + (T)(-lr) * gi / avg;
    }}
  }}
}}
"#,
        t = ctype(dt)
    )
}

/// Fused Adagrad step (weight decay, maximize; `clr` the decayed learning rate) over contiguous
/// buffers.
pub fn adagrad(name: &str, dt: DType) -> String {
    format!(
        r#"{PRELUDE}
typedef {t} T;
extern "C" __global__ void {name}(i64 n, T* __restrict__ p, const T* __restrict__ g, T* __restrict__ sum, double clr, double wd, double eps, int maximize) {{
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (i64)blockDim.x * gridDim.x) {{
    T pi = p[i];
    T gi = maximize ? -g[i] : g[i];
    if (wd != 0.0) gi = gi + (T)wd * pi;
    T s = sum[i] + gi * gi;
    sum[i] = s;
    p[i] = pi + (T)(-clr) * gi / ((T)sqrt((double)s) + (T)eps);
  }}
}}
"#,
        t = ctype(dt)
    )
}

/// Every kernel source ferrograd may compile, for the compile check (one per op and dtype).
pub fn all_sources() -> Vec<(String, String)> {
    let mut v = Vec::new();
    let floats = [DType::F32, DType::F64];
    let nums = [DType::F32, DType::F64, DType::I64];
    // the op table's rows with a CUDA expression (src/ops/table.rs), by family
    let float_unary: Vec<(&str, &str)> = FLOAT_UNARY.iter().filter_map(|&(n, e)| Some((n, e?))).collect();
    let predicates: Vec<(&str, &str)> = other_rows(&["Predicate"]).collect();
    let num_unary: Vec<(&str, &str)> = NUM_UNARY.iter().filter_map(|&(n, e)| Some((n, e?))).chain(other_rows(&["Unary"])).collect();
    let arith: Vec<(&str, &str, bool)> = other_rows(&["Binary"]).map(|(n, e)| (n, e, false)).chain(other_rows(&["Comparison"]).map(|(n, e)| (n, e, true))).collect();
    let float_binary: Vec<(&str, &str)> = FLOAT_BINARY.iter().filter_map(|&(n, e)| Some((n, e?))).chain(other_rows(&["FloatBinary"])).collect();
    for &(op, expr) in float_unary.iter().chain(&predicates) {
        for &dt in &floats {
            let out = if predicates.iter().any(|(p, _)| *p == op) { DType::Bool } else { dt };
            let ins = [Operand::Tensor(dt)];
            let name = elementwise_name(op, out, dt, &ins);
            v.push((name.clone(), elementwise(&name, out, dt, &ins, expr)));
        }
    }
    for &(op, expr) in &num_unary {
        for &dt in &nums {
            let ins = [Operand::Tensor(dt)];
            let name = elementwise_name(op, dt, dt, &ins);
            v.push((name.clone(), elementwise(&name, dt, dt, &ins, expr)));
        }
    }
    // casts and copies between every pair of the ten dtypes, and fills (a scalar operand)
    for &s in &DType::ALL {
        for &d in &DType::ALL {
            let ins = [Operand::Tensor(s)];
            let name = elementwise_name("copy", d, s, &ins);
            v.push((name.clone(), elementwise(&name, d, s, &ins, cast_expr(s, d))));
        }
        if s.is_narrow() {
            let ins = [Operand::Scalar];
            let name = elementwise_name("copy", s, s, &ins);
            v.push((name.clone(), elementwise(&name, s, s, &ins, "x")));
        }
    }
    for &(op, expr, cmp) in &arith {
        for &dt in &nums {
            let out = if cmp { DType::Bool } else { dt };
            for ins in [[Operand::Tensor(dt), Operand::Tensor(dt)], [Operand::Tensor(dt), Operand::Scalar], [Operand::Scalar, Operand::Tensor(dt)]] {
                let name = elementwise_name(op, out, dt, &ins);
                v.push((name.clone(), elementwise(&name, out, dt, &ins, expr)));
            }
        }
    }
    for &(op, expr) in &float_binary {
        for &dt in &floats {
            let ins = [Operand::Tensor(dt), Operand::Tensor(dt)];
            let name = elementwise_name(op, dt, dt, &ins);
            v.push((name.clone(), elementwise(&name, dt, dt, &ins, expr)));
        }
        for &dt in &[DType::F16, DType::BF16] {
            let ins = [Operand::Tensor(dt), Operand::Tensor(dt)];
            let name = elementwise_name(op, dt, DType::F32, &ins);
            v.push((name.clone(), elementwise(&name, dt, DType::F32, &ins, expr)));
        }
    }
    // float16/bfloat16: one kernel per op that loads 16-bit values, computes in float32 and
    // rounds once on store (unary, binary with a tensor or scalar operand, comparisons, the
    // fused backward kernels)
    for &dt in &[DType::F16, DType::BF16] {
        for &(op, expr) in float_unary.iter().chain(&num_unary) {
            let ins = [Operand::Tensor(dt)];
            let name = elementwise_name(op, dt, DType::F32, &ins);
            v.push((name.clone(), elementwise(&name, dt, DType::F32, &ins, expr)));
        }
        for &(op, expr, cmp) in &arith {
            let out = if cmp { DType::Bool } else { dt };
            for ins in [[Operand::Tensor(dt), Operand::Tensor(dt)], [Operand::Tensor(dt), Operand::Scalar], [Operand::Scalar, Operand::Tensor(dt)]] {
                let name = elementwise_name(op, out, DType::F32, &ins);
                v.push((name.clone(), elementwise(&name, out, DType::F32, &ins, expr)));
            }
        }
        for &(op, expr) in BACKWARD_KERNELS {
            let ins = [Operand::Tensor(dt), Operand::Tensor(dt)];
            let name = elementwise_name(op, dt, DType::F32, &ins);
            v.push((name.clone(), elementwise(&name, dt, DType::F32, &ins, expr)));
        }
    }
    for &(op, expr) in BACKWARD_KERNELS {
        for &dt in &floats {
            let ins = [Operand::Tensor(dt), Operand::Tensor(dt)];
            let name = elementwise_name(op, dt, dt, &ins);
            v.push((name.clone(), elementwise(&name, dt, dt, &ins, expr)));
        }
    }
    for &dt in &DType::ALL {
        let ins = [Operand::Tensor(DType::Bool), Operand::Tensor(dt), Operand::Tensor(dt)];
        let name = elementwise_name("where", dt, dt, &ins);
        v.push((name.clone(), elementwise(&name, dt, dt, &ins, "(a0[p[1]] ? y : z)")));
    }
    for kind in ["sum", "prod", "max", "min", "argmax", "argmin"] {
        for &dt in &nums {
            let out = if kind.starts_with("arg") { DType::I64 } else { dt };
            let name = format!("red_{kind}_{}_{}", tag(dt), tag(out));
            v.push((name.clone(), reduce(&name, kind, dt, out)));
        }
    }
    // float32 summed in float64 and back (float64's own kernels are among the ones above)
    for dt in [DType::F32] {
        for kind in ["sum", "prod"] {
            let name = format!("red_{kind}_{}_f64", tag(dt));
            v.push((name.clone(), reduce(&name, kind, dt, DType::F64)));
            let name = format!("red_{kind}_f64_{}", tag(dt));
            v.push((name.clone(), reduce(&name, kind, DType::F64, dt)));
        }
    }
    for kind in ["all", "any"] {
        let name = format!("red_{kind}_b8_b8");
        v.push((name.clone(), reduce(&name, kind, DType::Bool, DType::Bool)));
    }
    for &dt in &floats {
        for log in [false, true] {
            let name = format!("softmax_{}_{}", log as u8, tag(dt));
            v.push((name.clone(), softmax(&name, dt, log)));
        }
        for add in [false, true] {
            let name = format!("index_{}_{}", if add { "add" } else { "select" }, tag(dt));
            v.push((name.clone(), index_select(&name, dt, add)));
        }
        for (opt, src) in [("adam", adam as fn(&str, DType) -> String), ("sgd", sgd), ("rmsprop", rmsprop), ("adagrad", adagrad)] {
            let name = format!("{opt}_{}", tag(dt));
            v.push((name.clone(), src(&name, dt)));
        }
        for adjoint in [false, true] {
            let name = format!("{}_{}", if adjoint { "col2im" } else { "im2col" }, tag(dt));
            v.push((name.clone(), im2col(&name, dt, adjoint)));
        }
        for normal in [false, true] {
            let name = format!("{}_{}", if normal { "randn" } else { "rand" }, tag(dt));
            v.push((name.clone(), random(&name, dt, normal)));
        }
    }
    for &dt in &DType::ALL {
        for mode in ["take", "put", "put_add"] {
            if mode != "put_add" || has_atomic_add(dt) {
                let name = format!("{mode}_{}", tag(dt));
                v.push((name.clone(), take(&name, dt, mode)));
            }
        }
        for add in [false, true] {
            if !add || has_atomic_add(dt) {
                let name = format!("{}_dim_{}", if add { "scatter_add" } else { "gather" }, tag(dt));
                v.push((name.clone(), gather_dim(&name, dt, add)));
            }
        }
        let name = format!("randint_{}", tag(dt));
        v.push((name.clone(), randint(&name, dt)));
        for mode in ["take", "put", "put_add", "check"] {
            if mode != "put_add" || has_atomic_add(dt) {
                let name = format!("index_{mode}_{}", tag(dt));
                v.push((name.clone(), index_k(&name, dt, mode)));
            }
        }
    }
    v.push(("nonzero".to_string(), nonzero_kernels()));
    for &dt in &nums {
        let name = format!("scan_{}", tag(dt));
        v.push((name.clone(), scan(&name, dt)));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every op-table row with a CUDA expression is in the precompile list (so NVRTC checks its
    /// kernel in CI), in float32 and in float16 (computed in float32).
    #[test]
    fn table_rows_with_a_cuda_expression_are_precompiled() {
        let names: std::collections::HashSet<String> = all_sources().into_iter().map(|(n, _)| n).collect();
        let unary = FLOAT_UNARY.iter().chain(NUM_UNARY).filter_map(|&(n, e)| e.map(|_| n));
        let unary = unary.chain(other_rows(&["Unary", "Predicate"]).map(|(n, _)| n));
        for op in unary {
            let ins = [Operand::Tensor(DType::F32)];
            let out = if other_rows(&["Predicate"]).any(|(p, _)| p == op) { DType::Bool } else { DType::F32 };
            assert!(names.contains(&elementwise_name(op, out, DType::F32, &ins)), "{op}: no float32 kernel");
        }
        for (op, e) in FLOAT_BINARY.iter().copied().chain(other_rows(&["Binary"]).map(|(n, e)| (n, Some(e)))) {
            if e.is_some() {
                let ins = [Operand::Tensor(DType::F16), Operand::Tensor(DType::F16)];
                assert!(names.contains(&elementwise_name(op, DType::F16, DType::F32, &ins)), "{op}: no float16 kernel");
            }
        }
    }

    /// Every kernel has its own name and source (the disk cache holds one file per source).
    #[test]
    fn kernel_names_and_sources_are_distinct() {
        let all = all_sources();
        let mut names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        let dups: Vec<&&str> = names.windows(2).filter(|w| w[0] == w[1]).map(|w| &w[0]).collect();
        assert!(dups.is_empty(), "kernels named twice: {dups:?}");
        let srcs: std::collections::HashSet<&str> = all.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(srcs.len(), all.len());
    }
}
