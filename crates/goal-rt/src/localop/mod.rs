//! The local operation kernels: `res[i] = a[i] OP b[i]` for every operator,
//! type and width the schedule format allows.
//!
//! Buffers come from the user and may be unaligned or alias each other
//! exactly (in place: `res == a`), so elements are read and written with
//! unaligned loads and stores; the compiler still vectorises the loops.
//! Integer arithmetic wraps; integer division by zero is reported, with the
//! index of the element, instead of trapping.
//!
//! # 16-bit floats
//!
//! IEEE binary16 (`GOAL_FLOAT`, width 16) and bfloat16 (`GOAL_BFLOAT`) take
//! every operator a float takes. Each combine widens both operands to fp32
//! (exactly), combines in fp32 and rounds the result once to the 16-bit
//! format, to nearest, ties to even: the result depends on the two operands
//! only, so every rank gets the same bits and a collective equals a
//! sequential model of its combines in its order. A NaN result is the
//! quiet NaN without payload (`0x7E00`, `0x7FC0`: which NaN operand an fp32
//! operation passes on is not fixed across kernels),
//! infinities and subnormals are what widening and rounding make of them
//! (binary16 subnormals widen exactly; bfloat16 has fp32's exponent range);
//! MAX and MIN give the other operand for a NaN, as the 32- and 64-bit
//! floats do. COPY copies bits. The rule and its reference functions are in
//! [`goal_sched::half`]; docs/api.md states it for users.
//!
//! The kernels that run, chosen at run time as for the other types:
//!
//! * AVX-512 (F, BW, DQ, VL): 16 lanes; binary16 converts with
//!   `vcvtph2ps`/`vcvtps2ph` (round to nearest even), bfloat16 widens with
//!   `vpmovzxwd` + `vpslld 16` and narrows with integer arithmetic on the
//!   fp32 bits (`+ 0x7FFF + lsb`, NaNs replaced by a masked blend) and
//!   `vpmovdw`. AVX-512 BF16's `vcvtne2ps2bf16` is not used: it flushes
//!   subnormal inputs and results to zero, which the rule does not.
//! * AVX2: 8 lanes; binary16 with F16C's `vcvtph2ps`/`vcvtps2ph` where the
//!   processor has F16C (else the portable path), bfloat16 with the same
//!   integer rounding in 256-bit registers and `vpackusdw` + `vpermq`.
//! * Anything else: the portable loops over [`goal_sched::half`]'s scalar
//!   functions.
//!
//! All give the same bits (tested), as every lane does what the scalar
//! reference does. The rule assumes the processor's default floating-point
//! environment (no flush-to-zero), as the other float kernels do.

use goal_sched::{half, DataType, ReduceOp};

/// Why a kernel stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelError {
    /// Integer division by zero at this element.
    DivByZero(usize),
    /// A user operator's function panicked (a Rust caller's closure).
    UserPanic,
}

fn monotonic() -> libc::timespec {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts
}

/// Seconds on the monotonic clock, as `GOAL_WTIME` writes them.
pub fn wtime() -> f64 {
    let ts = monotonic();
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Nanoseconds on the same clock as [`wtime`].
pub(crate) fn monotonic_ns() -> u64 {
    let ts = monotonic();
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `r[i] = e(a[i], b[i])` for `i < n` (pointers to `$t`), with loops of
/// their own for the result in place over either operand (see [`apply`]).
macro_rules! elementwise {
    ($t:ty, $a:ident, $b:ident, $r:ident, $n:ident, |$x:ident, $y:ident| $e:expr) => {
        // In place (the result over an operand, as reductions do), a loop
        // of its own that reads the result's elements: with three pointers
        // and `r == a` the vectoriser's overlap check failed and the loop
        // ran one element at a time (see `apply`).
        if $r as *const $t == $a {
            for i in 0..$n {
                // SAFETY: the caller guarantees i < n elements are valid at each pointer.
                unsafe {
                    let $x = $r.add(i).read_unaligned();
                    let $y = $b.add(i).read_unaligned();
                    $r.add(i).write_unaligned($e);
                }
            }
        } else if $r as *const $t == $b {
            for i in 0..$n {
                // SAFETY: as above.
                unsafe {
                    let $x = $a.add(i).read_unaligned();
                    let $y = $r.add(i).read_unaligned();
                    $r.add(i).write_unaligned($e);
                }
            }
        } else {
            for i in 0..$n {
                // SAFETY: as above.
                unsafe {
                    let $x = $a.add(i).read_unaligned();
                    let $y = $b.add(i).read_unaligned();
                    $r.add(i).write_unaligned($e);
                }
            }
        }
    };
}

macro_rules! int_kernel {
    ($name:ident, $t:ty) => {
        /// # Safety
        /// `a`, `b` (if the operator reads it) and `r` must be valid for `n`
        /// elements; `r` may equal `a` or `b` but not partially overlap them.
        #[inline(always)]
        unsafe fn $name(op: ReduceOp, a: *const u8, b: *const u8, r: *mut u8, n: usize) -> Result<(), KernelError> {
            let (a, b, r) = (a as *const $t, b as *const $t, r as *mut $t);
            macro_rules! each {
                (|$x:ident, $y:ident| $e:expr) => {
                    elementwise!($t, a, b, r, n, |$x, $y| $e)
                };
            }
            match op {
                ReduceOp::Max => each!(|x, y| if x > y { x } else { y }),
                ReduceOp::Min => each!(|x, y| if x < y { x } else { y }),
                ReduceOp::Add => each!(|x, y| x.wrapping_add(y)),
                ReduceOp::Sub => each!(|x, y| x.wrapping_sub(y)),
                ReduceOp::Mul => each!(|x, y| x.wrapping_mul(y)),
                ReduceOp::And => each!(|x, y| x & y),
                ReduceOp::Or => each!(|x, y| x | y),
                ReduceOp::Xor => each!(|x, y| x ^ y),
                ReduceOp::Div => {
                    for i in 0..n {
                        // SAFETY: as above.
                        unsafe {
                            let y = b.add(i).read_unaligned();
                            if y == 0 {
                                return Err(KernelError::DivByZero(i));
                            }
                            let x = a.add(i).read_unaligned();
                            r.add(i).write_unaligned(x.wrapping_div(y));
                        }
                    }
                }
                ReduceOp::Copy => {
                    // SAFETY: valid for n elements; `copy` allows exact aliasing.
                    unsafe { goal_transport::move_bytes(a as *const u8, r as *mut u8, n * std::mem::size_of::<$t>()) }
                }
                ReduceOp::Wtime => unreachable!("WTIME is handled by the caller"),
            }
            Ok(())
        }
    };
}

macro_rules! float_kernel {
    ($name:ident, $t:ty) => {
        /// # Safety
        /// As for the integer kernels.
        #[inline(always)]
        unsafe fn $name(op: ReduceOp, a: *const u8, b: *const u8, r: *mut u8, n: usize) -> Result<(), KernelError> {
            let (a, b, r) = (a as *const $t, b as *const $t, r as *mut $t);
            macro_rules! each {
                (|$x:ident, $y:ident| $e:expr) => {
                    elementwise!($t, a, b, r, n, |$x, $y| $e)
                };
            }
            match op {
                ReduceOp::Max => each!(|x, y| x.max(y)),
                ReduceOp::Min => each!(|x, y| x.min(y)),
                ReduceOp::Add => each!(|x, y| x + y),
                ReduceOp::Sub => each!(|x, y| x - y),
                ReduceOp::Mul => each!(|x, y| x * y),
                ReduceOp::Div => each!(|x, y| x / y),
                ReduceOp::Copy => {
                    // SAFETY: valid for n elements; `copy` allows exact aliasing.
                    unsafe { goal_transport::move_bytes(a as *const u8, r as *mut u8, n * std::mem::size_of::<$t>()) }
                }
                ReduceOp::And | ReduceOp::Or | ReduceOp::Xor | ReduceOp::Wtime => {
                    unreachable!("refused by the compiler")
                }
            }
            Ok(())
        }
    };
}

int_kernel!(k_i8, i8);
int_kernel!(k_i16, i16);
int_kernel!(k_i32, i32);
int_kernel!(k_i64, i64);
int_kernel!(k_u8, u8);
int_kernel!(k_u16, u16);
int_kernel!(k_u32, u32);
int_kernel!(k_u64, u64);
float_kernel!(k_f32, f32);
float_kernel!(k_f64, f64);

/// Which 16-bit float `dt`/`width` is, if one: `Some(true)` for bfloat16,
/// `Some(false)` for binary16.
#[inline(always)]
fn half_format(dt: DataType, width: u32) -> Option<bool> {
    match (dt, width) {
        (DataType::Float, 16) => Some(false),
        (DataType::BFloat, 16) => Some(true),
        _ => None,
    }
}

/// The portable kernel of the 16-bit floats (bfloat16 if `bf`): widen,
/// combine in fp32, round, one element at a time over
/// [`goal_sched::half`]'s functions; also the vector kernels' tail.
///
/// # Safety
/// As for the integer kernels.
#[inline(always)]
unsafe fn k_half(bf: bool, op: ReduceOp, a: *const u8, b: *const u8, r: *mut u8, n: usize) {
    if op == ReduceOp::Copy {
        // SAFETY: valid for n elements; `copy` allows exact aliasing.
        unsafe { goal_transport::move_bytes(a, r, n * 2) };
        return;
    }
    let (a, b, r) = (a as *const u16, b as *const u16, r as *mut u16);
    // One loop per operator (the operator a constant in each), so that the
    // compiler can vectorise what the target allows.
    macro_rules! each {
        ($to:path, $from:path) => {
            match op {
                ReduceOp::Add => elementwise!(u16, a, b, r, n, |x, y| $to(half::combine_f32(ReduceOp::Add, $from(x), $from(y)))),
                ReduceOp::Sub => elementwise!(u16, a, b, r, n, |x, y| $to(half::combine_f32(ReduceOp::Sub, $from(x), $from(y)))),
                ReduceOp::Mul => elementwise!(u16, a, b, r, n, |x, y| $to(half::combine_f32(ReduceOp::Mul, $from(x), $from(y)))),
                ReduceOp::Div => elementwise!(u16, a, b, r, n, |x, y| $to(half::combine_f32(ReduceOp::Div, $from(x), $from(y)))),
                ReduceOp::Max => elementwise!(u16, a, b, r, n, |x, y| $to(half::combine_f32(ReduceOp::Max, $from(x), $from(y)))),
                ReduceOp::Min => elementwise!(u16, a, b, r, n, |x, y| $to(half::combine_f32(ReduceOp::Min, $from(x), $from(y)))),
                ReduceOp::Copy | ReduceOp::And | ReduceOp::Or | ReduceOp::Xor | ReduceOp::Wtime => {
                    unreachable!("refused by the compiler")
                }
            }
        };
    }
    if bf {
        each!(half::f32_to_bf16, half::bf16_to_f32)
    } else {
        each!(half::f32_to_f16, half::f16_to_f32)
    }
}

/// Applies `op` to `n` elements of `dt`/`width` bits: `r[i] = a[i] op b[i]`.
/// (User operators: [`crate::userop::apply`].)
///
/// In place (`r == a` or `r == b`, as reductions combine into an
/// accumulator) each kernel runs a loop of its own: one loop for all three
/// cases ran one element at a time when `r` equalled an operand (the
/// vectoriser's overlap check failed), 15-19 us for 256 KiB of doubles
/// against 8-9 us now, in place or not.
///
/// On x86-64 processors with AVX-512 or AVX2 the kernels run as compiled for
/// it (see [`apply_avx512`], [`apply_avx2`]); the results are the same bits,
/// as every operator acts on one element pair at a time, exactly rounded.
///
/// # Safety
/// `a` and `r` must be valid for `n * width / 8` bytes, and `b` too when the
/// operator reads a second operand; `r` may equal `a` or `b` exactly but must
/// not overlap them partially. For `Wtime`, `r` must be valid for 8 bytes.
pub unsafe fn apply(op: ReduceOp, dt: DataType, width: u32, a: *const u8, b: *const u8, r: *mut u8, n: usize) -> Result<(), KernelError> {
    #[cfg(target_arch = "x86_64")]
    if avx512() {
        // SAFETY: the processor has AVX-512 F, BW, DQ and VL (checked just now);
        // the rest is forwarded from the caller's guarantees.
        return unsafe { apply_avx512(op, dt, width, a, b, r, n) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2 (checked just now); the rest is
        // forwarded from the caller's guarantees.
        return unsafe { apply_avx2(op, dt, width, a, b, r, n) };
    }
    // SAFETY: forwarded from the caller's guarantees.
    unsafe { apply_any(op, dt, width, a, b, r, n) }
}

/// [`apply`] with 256-bit vectors. Rust's x86-64 target assumes SSE2 only,
/// where an addition of 256 KiB of doubles (out of place, in the L2 cache)
/// takes 14-15 us here against 8 us with AVX2 (what a C loop built with
/// `-O3 -mavx2` takes too, and what Open MPI's AVX operators reach); the
/// root of a 2-rank reduce of 256 KiB spends more time there than in
/// reading its peer's vector.
///
/// # Safety
/// As for [`apply`], and the processor must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn apply_avx2(op: ReduceOp, dt: DataType, width: u32, a: *const u8, b: *const u8, r: *mut u8, n: usize) -> Result<(), KernelError> {
    match half_format(dt, width) {
        Some(bf) if op.is_binary() && op != ReduceOp::Wtime => {
            if bf {
                // SAFETY: this function runs only where the processor has AVX2;
                // the buffers are forwarded from the caller's guarantees.
                unsafe { x86::bf16_avx2(op, a, b, r, n) };
                return Ok(());
            }
            if std::arch::is_x86_feature_detected!("f16c") {
                // SAFETY: AVX2 as above, F16C checked just now; buffers forwarded.
                unsafe { x86::f16_avx2(op, a, b, r, n) };
                return Ok(());
            }
        }
        _ => {}
    }
    // SAFETY: forwarded from the caller's guarantees.
    unsafe { apply_any(op, dt, width, a, b, r, n) }
}

/// Whether the processor has the AVX-512 subsets [`apply_avx512`] is built for.
#[cfg(target_arch = "x86_64")]
#[inline]
fn avx512() -> bool {
    use std::arch::is_x86_feature_detected as has;
    has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl")
}

/// [`apply`] with 512-bit vectors, as Open MPI's AVX operators use where
/// the processor has them. 2 ranks, the root of a reduce of doubles, six
/// alternations against the AVX2 build: 256 KiB 21.35-21.74 -> 20.39-21.18
/// us, 64 KiB 6.65-6.91 -> 6.37-6.70 (most of the root's time is its CMA
/// read of the peer's vector; the addition itself runs from the L2 cache).
///
/// # Safety
/// As for [`apply`], and the processor must have AVX-512 F, BW, DQ and VL.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
unsafe fn apply_avx512(op: ReduceOp, dt: DataType, width: u32, a: *const u8, b: *const u8, r: *mut u8, n: usize) -> Result<(), KernelError> {
    if let Some(bf) = half_format(dt, width) {
        if op.is_binary() && op != ReduceOp::Wtime {
            // SAFETY: this function runs only where the processor has AVX-512
            // F, BW, DQ and VL (what the kernels need); buffers forwarded.
            unsafe {
                if bf {
                    x86::bf16_avx512(op, a, b, r, n)
                } else {
                    x86::f16_avx512(op, a, b, r, n)
                }
            };
            return Ok(());
        }
    }
    // SAFETY: forwarded from the caller's guarantees.
    unsafe { apply_any(op, dt, width, a, b, r, n) }
}

/// The vector kernels of the 16-bit floats (see the module documentation):
/// whole vectors of elements, then the portable kernel for the rest.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{k_half, ReduceOp};
    use std::arch::x86_64::*;

    /// `r = a op b` over `n` elements, `$w` at a time, with `$load`/`$store`
    /// converting to and from fp32 vectors; then the rest with
    /// [`k_half`]`($bf, ..)`. The operator is matched once, outside the loop.
    macro_rules! lanes {
        ($bf:expr, $w:expr, $load:ident, $store:ident, $max:ident, $min:ident, $add:ident, $sub:ident, $mul:ident, $div:ident, $op:ident, $a:ident, $b:ident, $r:ident, $n:ident) => {{
            macro_rules! run {
                (|$x:ident, $y:ident| $e:expr) => {{
                    let mut i = 0;
                    while i + $w <= $n {
                        // SAFETY: elements i .. i + $w are within the n valid
                        // ones at each pointer; loading both operands before
                        // the store keeps exact aliasing (in place) right.
                        unsafe {
                            let $x = $load($a.add(2 * i));
                            let $y = $load($b.add(2 * i));
                            $store($r.add(2 * i), $e);
                        }
                        i += $w;
                    }
                    i
                }};
            }
            let done = match $op {
                ReduceOp::Add => run!(|x, y| $add(x, y)),
                ReduceOp::Sub => run!(|x, y| $sub(x, y)),
                ReduceOp::Mul => run!(|x, y| $mul(x, y)),
                ReduceOp::Div => run!(|x, y| $div(x, y)),
                ReduceOp::Max => run!(|x, y| $max(x, y)),
                ReduceOp::Min => run!(|x, y| $min(x, y)),
                _ => unreachable!("COPY and the integer operators do not come here"),
            };
            // SAFETY: the remaining elements are within the valid ones.
            unsafe { k_half($bf, $op, $a.add(2 * done), $b.add(2 * done), $r.add(2 * done), $n - done) }
        }};
    }

    // ---- 256 bits -------------------------------------------------------

    /// `max` as [`goal_sched::half::combine_f32`] has it: `maxps(y, x)`
    /// (y if y > x, else x), and y where x is a NaN.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn max8(x: __m256, y: __m256) -> __m256 {
        _mm256_blendv_ps(_mm256_max_ps(y, x), y, _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x))
    }

    /// `min`, as [`max8`].
    #[target_feature(enable = "avx2")]
    #[inline]
    fn min8(x: __m256, y: __m256) -> __m256 {
        _mm256_blendv_ps(_mm256_min_ps(y, x), y, _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x))
    }

    /// 8 binary16 at `p`, widened.
    ///
    /// # Safety
    /// 16 bytes readable at `p`; the processor has AVX2 and F16C.
    #[target_feature(enable = "avx2,f16c")]
    #[inline]
    unsafe fn load_f16x8(p: *const u8) -> __m256 {
        // SAFETY: 16 readable bytes (the caller's guarantee); unaligned load.
        _mm256_cvtph_ps(unsafe { _mm_loadu_si128(p as *const __m128i) })
    }

    /// 8 fp32 rounded to binary16 (to nearest even) at `p`; NaNs become
    /// the quiet NaN without payload.
    ///
    /// # Safety
    /// 16 writable bytes at `p`; the processor has AVX2 and F16C.
    #[target_feature(enable = "avx2,f16c")]
    #[inline]
    unsafe fn store_f16x8(p: *mut u8, v: __m256) {
        let v = _mm256_blendv_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc0_0000)), _mm256_cmp_ps::<_CMP_UNORD_Q>(v, v));
        // SAFETY: 16 writable bytes (the caller's guarantee); unaligned store.
        unsafe { _mm_storeu_si128(p as *mut __m128i, _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v)) }
    }

    /// 8 bfloat16 at `p`, widened (a 16-bit shift).
    ///
    /// # Safety
    /// 16 bytes readable at `p`; the processor has AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn load_bf16x8(p: *const u8) -> __m256 {
        // SAFETY: 16 readable bytes (the caller's guarantee); unaligned load.
        let h = unsafe { _mm_loadu_si128(p as *const __m128i) };
        _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h)))
    }

    /// 8 fp32 rounded to bfloat16 (to nearest even) at `p`:
    /// `(bits + 0x7FFF + lsb) >> 16`, or the quiet NaN `0x7FC0` for a NaN.
    ///
    /// # Safety
    /// 16 writable bytes at `p`; the processor has AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn store_bf16x8(p: *mut u8, v: __m256) {
        let bits = _mm256_castps_si256(v);
        let high = _mm256_srli_epi32::<16>(bits);
        let lsb = _mm256_and_si256(high, _mm256_set1_epi32(1));
        let rounded = _mm256_srli_epi32::<16>(_mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7fff)), lsb));
        let quiet = _mm256_set1_epi32(0x7fc0);
        let nan = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_UNORD_Q>(v, v));
        let out = _mm256_blendv_epi8(rounded, quiet, nan);
        // Every lane is below 0x10000, so the saturating pack is exact; it
        // packs per 128-bit half, the permutation joins the halves' low quadwords.
        let packed = _mm256_permute4x64_epi64::<0b1000>(_mm256_packus_epi32(out, out));
        // SAFETY: 16 writable bytes (the caller's guarantee); unaligned store.
        unsafe { _mm_storeu_si128(p as *mut __m128i, _mm256_castsi256_si128(packed)) }
    }

    /// binary16 with F16C, 8 lanes.
    ///
    /// # Safety
    /// As for [`super::apply`] with a binary operator other than WTIME; the
    /// processor has AVX2 and F16C.
    #[target_feature(enable = "avx2,f16c")]
    pub(super) unsafe fn f16_avx2(op: ReduceOp, a: *const u8, b: *const u8, r: *mut u8, n: usize) {
        lanes!(false, 8, load_f16x8, store_f16x8, max8, min8, _mm256_add_ps, _mm256_sub_ps, _mm256_mul_ps, _mm256_div_ps, op, a, b, r, n)
    }

    /// bfloat16 with AVX2 integer rounding, 8 lanes.
    ///
    /// # Safety
    /// As for [`super::apply`] with a binary operator other than WTIME; the
    /// processor has AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn bf16_avx2(op: ReduceOp, a: *const u8, b: *const u8, r: *mut u8, n: usize) {
        lanes!(true, 8, load_bf16x8, store_bf16x8, max8, min8, _mm256_add_ps, _mm256_sub_ps, _mm256_mul_ps, _mm256_div_ps, op, a, b, r, n)
    }

    // ---- 512 bits -------------------------------------------------------

    /// `max` as [`max8`], 16 lanes.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn max16(x: __m512, y: __m512) -> __m512 {
        _mm512_mask_blend_ps(_mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x), _mm512_max_ps(y, x), y)
    }

    /// `min` as [`min8`], 16 lanes.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn min16(x: __m512, y: __m512) -> __m512 {
        _mm512_mask_blend_ps(_mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x), _mm512_min_ps(y, x), y)
    }

    /// 16 binary16 at `p`, widened.
    ///
    /// # Safety
    /// 32 bytes readable at `p`; the processor has AVX-512 F.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn load_f16x16(p: *const u8) -> __m512 {
        // SAFETY: 32 readable bytes (the caller's guarantee); unaligned load.
        _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(p as *const __m256i) })
    }

    /// 16 fp32 rounded to binary16 (to nearest even) at `p`, NaNs as [`store_f16x8`].
    ///
    /// # Safety
    /// 32 writable bytes at `p`; the processor has AVX-512 F.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn store_f16x16(p: *mut u8, v: __m512) {
        let v = _mm512_mask_blend_ps(_mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v), v, _mm512_castsi512_ps(_mm512_set1_epi32(0x7fc0_0000)));
        let h = _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v);
        // SAFETY: 32 writable bytes (the caller's guarantee); unaligned store.
        unsafe { _mm256_storeu_si256(p as *mut __m256i, h) }
    }

    /// 16 bfloat16 at `p`, widened.
    ///
    /// # Safety
    /// 32 bytes readable at `p`; the processor has AVX-512 F.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn load_bf16x16(p: *const u8) -> __m512 {
        // SAFETY: 32 readable bytes (the caller's guarantee); unaligned load.
        let h = unsafe { _mm256_loadu_si256(p as *const __m256i) };
        _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h)))
    }

    /// 16 fp32 rounded to bfloat16 at `p`, as [`store_bf16x8`].
    ///
    /// # Safety
    /// 32 writable bytes at `p`; the processor has AVX-512 F.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn store_bf16x16(p: *mut u8, v: __m512) {
        let bits = _mm512_castps_si512(v);
        let high = _mm512_srli_epi32::<16>(bits);
        let lsb = _mm512_and_si512(high, _mm512_set1_epi32(1));
        let rounded = _mm512_srli_epi32::<16>(_mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)), lsb));
        let quiet = _mm512_set1_epi32(0x7fc0);
        let out = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v), rounded, quiet);
        // SAFETY: 32 writable bytes (the caller's guarantee); unaligned store.
        unsafe { _mm256_storeu_si256(p as *mut __m256i, _mm512_cvtepi32_epi16(out)) }
    }

    /// binary16, 16 lanes.
    ///
    /// # Safety
    /// As for [`super::apply`] with a binary operator other than WTIME; the
    /// processor has AVX-512 F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn f16_avx512(op: ReduceOp, a: *const u8, b: *const u8, r: *mut u8, n: usize) {
        lanes!(false, 16, load_f16x16, store_f16x16, max16, min16, _mm512_add_ps, _mm512_sub_ps, _mm512_mul_ps, _mm512_div_ps, op, a, b, r, n)
    }

    /// bfloat16, 16 lanes.
    ///
    /// # Safety
    /// As for [`super::apply`] with a binary operator other than WTIME; the
    /// processor has AVX-512 F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn bf16_avx512(op: ReduceOp, a: *const u8, b: *const u8, r: *mut u8, n: usize) {
        lanes!(true, 16, load_bf16x16, store_bf16x16, max16, min16, _mm512_add_ps, _mm512_sub_ps, _mm512_mul_ps, _mm512_div_ps, op, a, b, r, n)
    }
}

/// The kernels, inlined into each entry point of [`apply`].
///
/// # Safety
/// As for [`apply`].
#[inline(always)]
unsafe fn apply_any(op: ReduceOp, dt: DataType, width: u32, a: *const u8, b: *const u8, r: *mut u8, n: usize) -> Result<(), KernelError> {
    if op == ReduceOp::Wtime {
        // SAFETY: the caller guarantees 8 writable bytes at r.
        unsafe { (r as *mut f64).write_unaligned(wtime()) };
        return Ok(());
    }
    // COPY reads no second operand: give the kernels a valid pointer anyway.
    let b = if op.is_binary() { b } else { a };
    // SAFETY: forwarded from the caller's guarantees.
    unsafe {
        match (dt, width) {
            (DataType::SInt, 8) => k_i8(op, a, b, r, n),
            (DataType::SInt, 16) => k_i16(op, a, b, r, n),
            (DataType::SInt, 32) => k_i32(op, a, b, r, n),
            (DataType::SInt, 64) => k_i64(op, a, b, r, n),
            (DataType::UInt, 8) => k_u8(op, a, b, r, n),
            (DataType::UInt, 16) => k_u16(op, a, b, r, n),
            (DataType::UInt, 32) => k_u32(op, a, b, r, n),
            (DataType::UInt, 64) => k_u64(op, a, b, r, n),
            (DataType::Float, 32) => k_f32(op, a, b, r, n),
            (DataType::Float, 64) => k_f64(op, a, b, r, n),
            (DataType::Float, 16) => {
                k_half(false, op, a, b, r, n);
                Ok(())
            }
            (DataType::BFloat, 16) => {
                k_half(true, op, a, b, r, n);
                Ok(())
            }
            // Opaque elements take only COPY among the built-in operators.
            (DataType::Bytes, _) if op == ReduceOp::Copy => {
                goal_transport::move_bytes(a, r, n * (width as usize / 8));
                Ok(())
            }
            _ => unreachable!("refused by the compiler"),
        }
    }
}

#[cfg(test)]
mod tests;
