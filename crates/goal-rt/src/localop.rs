//! The local operation kernels: `res[i] = a[i] OP b[i]` for every operator,
//! type and width the schedule format allows.
//!
//! Buffers come from the user and may be unaligned or alias each other
//! exactly (in place: `res == a`), so elements are read and written with
//! unaligned loads and stores; the compiler still vectorises the loops.
//! Integer arithmetic wraps; integer division by zero is reported, with the
//! index of the element, instead of trapping.

use goal_sched::{DataType, ReduceOp};

/// Why a kernel stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelError {
    /// Integer division by zero at this element.
    DivByZero(usize),
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
                    unsafe { std::ptr::copy(a as *const u8, r as *mut u8, n * std::mem::size_of::<$t>()) }
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
                    unsafe { std::ptr::copy(a as *const u8, r as *mut u8, n * std::mem::size_of::<$t>()) }
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

/// Applies `op` to `n` elements of `dt`/`width` bits: `r[i] = a[i] op b[i]`.
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
pub unsafe fn apply(op: ReduceOp, dt: DataType, width: u8, a: *const u8, b: *const u8, r: *mut u8, n: usize) -> Result<(), KernelError> {
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
unsafe fn apply_avx2(op: ReduceOp, dt: DataType, width: u8, a: *const u8, b: *const u8, r: *mut u8, n: usize) -> Result<(), KernelError> {
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
unsafe fn apply_avx512(op: ReduceOp, dt: DataType, width: u8, a: *const u8, b: *const u8, r: *mut u8, n: usize) -> Result<(), KernelError> {
    // SAFETY: forwarded from the caller's guarantees.
    unsafe { apply_any(op, dt, width, a, b, r, n) }
}

/// The kernels, inlined into each entry point of [`apply`].
///
/// # Safety
/// As for [`apply`].
#[inline(always)]
unsafe fn apply_any(op: ReduceOp, dt: DataType, width: u8, a: *const u8, b: *const u8, r: *mut u8, n: usize) -> Result<(), KernelError> {
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
            _ => unreachable!("refused by the compiler"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<T: Copy>(op: ReduceOp, dt: DataType, a: &[T], b: &[T]) -> Result<Vec<T>, KernelError> {
        let mut r = a.to_vec();
        let w = (std::mem::size_of::<T>() * 8) as u8;
        // SAFETY: all three slices hold a.len() elements.
        unsafe { apply(op, dt, w, a.as_ptr() as _, b.as_ptr() as _, r.as_mut_ptr() as _, a.len())? };
        Ok(r)
    }

    #[test]
    fn integers_wrap() {
        assert_eq!(run(ReduceOp::Add, DataType::UInt, &[255u8, 1], &[1u8, 1]).unwrap(), vec![0, 2]);
        assert_eq!(run(ReduceOp::Mul, DataType::SInt, &[i32::MAX], &[2]).unwrap(), vec![-2]);
        assert_eq!(run(ReduceOp::Div, DataType::SInt, &[i64::MIN], &[-1]).unwrap(), vec![i64::MIN]);
        assert_eq!(run(ReduceOp::Sub, DataType::UInt, &[0u16], &[1]).unwrap(), vec![u16::MAX]);
    }

    #[test]
    fn integer_division_by_zero_names_the_element() {
        assert_eq!(run(ReduceOp::Div, DataType::UInt, &[4u32, 5, 6], &[2, 1, 0]), Err(KernelError::DivByZero(2)));
        assert_eq!(run(ReduceOp::Div, DataType::Float, &[1.0f64], &[0.0]).unwrap()[0], f64::INFINITY);
    }

    /// In place on either operand (the loops of their own in `each!`),
    /// the result is the out-of-place one, over lengths that leave a
    /// remainder after any vector width.
    #[test]
    fn in_place_on_either_operand_matches_out_of_place() {
        fn check<T: Copy + PartialEq + std::fmt::Debug>(dt: DataType, ops: &[ReduceOp], a: &[T], b: &[T]) {
            let w = (std::mem::size_of::<T>() * 8) as u8;
            let n = a.len();
            for &op in ops {
                let mut want = a.to_vec();
                // SAFETY: every slice holds n elements; the outputs are distinct vectors or exactly an operand.
                unsafe { apply(op, dt, w, a.as_ptr() as _, b.as_ptr() as _, want.as_mut_ptr() as _, n).unwrap() };
                let (mut on_a, mut on_b) = (a.to_vec(), b.to_vec());
                // SAFETY: as above; each result is exactly one of its operands.
                unsafe {
                    apply(op, dt, w, on_a.as_ptr() as _, b.as_ptr() as _, on_a.as_mut_ptr() as _, n).unwrap();
                    apply(op, dt, w, a.as_ptr() as _, on_b.as_ptr() as _, on_b.as_mut_ptr() as _, n).unwrap();
                }
                assert_eq!(on_a, want, "{op:?} {dt:?}/{w} in place on the first operand");
                assert_eq!(on_b, want, "{op:?} {dt:?}/{w} in place on the second operand");
            }
        }
        let all = [ReduceOp::Max, ReduceOp::Min, ReduceOp::Add, ReduceOp::Sub, ReduceOp::Mul];
        let n: usize = 1003;
        let f: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 100.0).collect();
        let g: Vec<f64> = (0..n).map(|i| 7.25 - i as f64).collect();
        check(DataType::Float, &[&all[..], &[ReduceOp::Div]].concat(), &f, &g);
        let f32s: Vec<f32> = f.iter().map(|&x| x as f32).collect();
        let g32s: Vec<f32> = g.iter().map(|&x| x as f32).collect();
        check(DataType::Float, &all, &f32s, &g32s);
        let i: Vec<i32> = (0..n as i32).map(|x| x * 37 - 5000).collect();
        let j: Vec<i32> = (0..n as i32).map(|x| 1 + (x % 97)).collect();
        check(DataType::SInt, &[&all[..], &[ReduceOp::Div, ReduceOp::And, ReduceOp::Or, ReduceOp::Xor]].concat(), &i, &j);
        let u: Vec<u8> = (0..n).map(|x| (x * 13) as u8).collect();
        let v: Vec<u8> = (0..n).map(|x| 1 + (x % 200) as u8).collect();
        check(DataType::UInt, &[&all[..], &[ReduceOp::Div, ReduceOp::Xor]].concat(), &u, &v);
    }

    #[test]
    fn every_operator_on_every_type() {
        assert_eq!(run(ReduceOp::Max, DataType::SInt, &[-1i8, 5], &[3, -7]).unwrap(), vec![3, 5]);
        assert_eq!(run(ReduceOp::Min, DataType::Float, &[1.5f32, -2.0], &[0.5, 3.0]).unwrap(), vec![0.5, -2.0]);
        assert_eq!(run(ReduceOp::Xor, DataType::UInt, &[0b1100u64], &[0b1010]).unwrap(), vec![0b0110]);
        assert_eq!(run(ReduceOp::And, DataType::SInt, &[0b1100i16], &[0b1010]).unwrap(), vec![0b1000]);
        assert_eq!(run(ReduceOp::Or, DataType::UInt, &[0b1100u32], &[0b1010]).unwrap(), vec![0b1110]);
        assert_eq!(run(ReduceOp::Copy, DataType::Float, &[2.5f64], &[0.0]).unwrap(), vec![2.5]);
    }

    /// The AVX2 and AVX-512 builds of the kernels give the bits of the
    /// portable one for every operator and type, over a length that leaves
    /// a remainder after any vector width, with NaNs, infinities and signed
    /// zeros among the floats (the min and max of a NaN pair take their own
    /// paths). Each build is checked where the processor has it.
    /// An entry point with [`apply`]'s signature.
    #[cfg(target_arch = "x86_64")]
    type Kernel = unsafe fn(ReduceOp, DataType, u8, *const u8, *const u8, *mut u8, usize) -> Result<(), KernelError>;

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn vector_kernels_give_the_portable_bits() {
        let mut builds: Vec<(&str, Kernel)> = Vec::new();
        if std::arch::is_x86_feature_detected!("avx2") {
            builds.push(("avx2", apply_avx2));
        }
        if avx512() {
            builds.push(("avx512", apply_avx512));
        }
        for (name, kernel) in builds {
            say!("checking the {name} build");
            check_build(kernel);
        }
    }

    #[cfg(target_arch = "x86_64")]
    fn check_build(kernel: Kernel) {
        fn bits<T: Copy>(v: &[T]) -> Vec<u8> {
            // SAFETY: any initialised slice of plain numbers can be read as bytes.
            unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)).to_vec() }
        }
        fn check<T: Copy>(kernel: Kernel, dt: DataType, ops: &[ReduceOp], a: &[T], b: &[T]) {
            let w = (std::mem::size_of::<T>() * 8) as u8;
            for &op in ops {
                let (mut fast, mut plain) = (a.to_vec(), a.to_vec());
                // SAFETY: all slices hold a.len() elements; the results are vectors of their own.
                let (x, y) = unsafe {
                    (
                        kernel(op, dt, w, a.as_ptr() as _, b.as_ptr() as _, fast.as_mut_ptr() as _, a.len()),
                        apply_any(op, dt, w, a.as_ptr() as _, b.as_ptr() as _, plain.as_mut_ptr() as _, a.len()),
                    )
                };
                assert_eq!(x, y, "{op:?} {dt:?}/{w}");
                assert_eq!(bits(&fast), bits(&plain), "{op:?} {dt:?}/{w}");
            }
        }
        let n = 1037usize;
        let odd = [f64::NAN, -0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY, 1e-310, -1e308];
        let f: Vec<f64> = (0..n).map(|i| if i % 13 == 0 { odd[i % 7] } else { i as f64 * 0.37 - 150.0 }).collect();
        let g: Vec<f64> = (0..n).map(|i| if i % 11 == 0 { odd[(i + 3) % 7] } else { 3.1 - i as f64 / 7.0 }).collect();
        let floats = [ReduceOp::Max, ReduceOp::Min, ReduceOp::Add, ReduceOp::Sub, ReduceOp::Mul, ReduceOp::Div, ReduceOp::Copy];
        check(kernel, DataType::Float, &floats, &f, &g);
        let (f32s, g32s): (Vec<f32>, Vec<f32>) = (f.iter().map(|&x| x as f32).collect(), g.iter().map(|&x| x as f32).collect());
        check(kernel, DataType::Float, &floats, &f32s, &g32s);
        let ints = [ReduceOp::Max, ReduceOp::Min, ReduceOp::Add, ReduceOp::Sub, ReduceOp::Mul, ReduceOp::And, ReduceOp::Or, ReduceOp::Xor, ReduceOp::Div];
        let i: Vec<i64> = (0..n as i64).map(|x| x.wrapping_mul(0x9E37_79B9_7F4A_7C15u64 as i64)).collect();
        let j: Vec<i64> = (0..n as i64).map(|x| 1 + (x * 7919) % 1000 - 500 * (x % 2)).collect();
        check(kernel, DataType::SInt, &ints, &i, &j);
        check(kernel, DataType::UInt, &ints, &i.iter().map(|&x| x as u64).collect::<Vec<_>>(), &j.iter().map(|&x| (x as u64) | 1).collect::<Vec<_>>());
        check(kernel, DataType::SInt, &ints, &i.iter().map(|&x| x as i32).collect::<Vec<_>>(), &j.iter().map(|&x| x as i32 | 1).collect::<Vec<_>>());
        check(kernel, DataType::UInt, &ints, &i.iter().map(|&x| x as u16).collect::<Vec<_>>(), &j.iter().map(|&x| x as u16 | 1).collect::<Vec<_>>());
        check(kernel, DataType::SInt, &ints, &i.iter().map(|&x| x as i8).collect::<Vec<_>>(), &j.iter().map(|&x| x as i8 | 1).collect::<Vec<_>>());
    }
}
