//! The kernels against scalar models: every operator on every type and
//! width, in place and out of place, each vector variant the CPU has bit
//! for bit against the portable path, and the 16-bit formats' rounding.

use super::*;

fn run<T: Copy>(op: ReduceOp, dt: DataType, a: &[T], b: &[T]) -> Result<Vec<T>, KernelError> {
    let mut r = a.to_vec();
    let w = (std::mem::size_of::<T>() * 8) as u32;
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
        let w = (std::mem::size_of::<T>() * 8) as u32;
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
type Kernel = unsafe fn(ReduceOp, DataType, u32, *const u8, *const u8, *mut u8, usize) -> Result<(), KernelError>;

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

/// Every build of the 16-bit float kernels the processor runs (the
/// portable one, AVX2 with F16C or without, AVX-512) gives, for every
/// operator, the bits of the scalar model of the rounding rule
/// ([`half::combine_f16`], [`half::combine_bf16`]): out of place and in
/// place on either operand, over every 16-bit pattern as the first
/// operand (NaNs signalling and quiet, infinities, signed zeros,
/// subnormals, the largest finite values) against a mix of special and
/// other values, after every pair of special values (with sums and
/// products that are ties), and a length that leaves a tail after any
/// vector width.
#[test]
fn half_kernels_give_the_scalar_model_bits() {
    let mut builds: Vec<(&str, Kernel)> = vec![("portable", apply_any)];
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            builds.push(("avx2", apply_avx2));
        }
        if avx512() {
            builds.push(("avx512", apply_avx512));
        }
    }
    let f16s: &[u16] = &[
        0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7d00, 0xfe01, 0x0001, 0x8001, 0x0002, 0x03ff, 0x83ff, 0x0400, 0x7bff, 0xfbff, 0x7bfe,
        0x3c00, 0xbc00, 0x3c01, 0x1000, 0x1001, 0x3800, 0x4000, 0x5bff, 0x0c00, 0x2e66,
    ];
    let bf16s: &[u16] = &[
        0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffc1, 0x0001, 0x8001, 0x007f, 0x0080, 0x7f7f, 0xff7f, 0x7f7e, 0x3f80,
        0xbf80, 0x3f81, 0x3b80, 0x3b81, 0x3b00, 0x4000, 0x0100, 0x3f00, 0x3eaa,
    ];
    let ops = [ReduceOp::Max, ReduceOp::Min, ReduceOp::Add, ReduceOp::Sub, ReduceOp::Mul, ReduceOp::Div, ReduceOp::Copy];
    for (dt, specials, model) in [
        (DataType::Float, f16s, half::combine_f16 as fn(ReduceOp, u16, u16) -> u16),
        (DataType::BFloat, bf16s, half::combine_bf16),
    ] {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for &x in specials {
            for &y in specials {
                a.push(x);
                b.push(y);
            }
        }
        let mut h = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..=u16::MAX as usize + 7 {
            h = h.rotate_left(17).wrapping_mul(0xBF58_476D_1CE4_E5B9) ^ i as u64;
            a.push(i as u16);
            b.push(if i % 3 == 0 { specials[(h % specials.len() as u64) as usize] } else { (h >> 20) as u16 });
        }
        let n = a.len();
        for &op in &ops {
            let want: Vec<u16> = a.iter().zip(&b).map(|(&x, &y)| model(op, x, y)).collect();
            for (name, kernel) in &builds {
                let ctx = format!("{name} {op:?} {}/16", dt.name());
                let (mut out, mut on_a, mut on_b) = (vec![0u16; n], a.clone(), b.clone());
                // SAFETY: every vector holds n elements; each result is a vector of its own or exactly an operand.
                unsafe {
                    kernel(op, dt, 16, a.as_ptr() as _, b.as_ptr() as _, out.as_mut_ptr() as _, n).unwrap();
                    kernel(op, dt, 16, on_a.as_ptr() as _, b.as_ptr() as _, on_a.as_mut_ptr() as _, n).unwrap();
                    kernel(op, dt, 16, a.as_ptr() as _, on_b.as_ptr() as _, on_b.as_mut_ptr() as _, n).unwrap();
                }
                for (k, got) in [("out of place", &out), ("in place on the first operand", &on_a), ("in place on the second", &on_b)] {
                    if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
                        panic!("{ctx} {k}: element {i}: {:#06x} op {:#06x} gave {:#06x}, want {:#06x}", a[i], b[i], got[i], want[i]);
                    }
                }
            }
        }
    }
}

/// The scalar reference's rounding to binary16 agrees with the
/// processor's (F16C, round to nearest even) on a million fp32 bit
/// patterns spread over all of them; NaNs, which F16C passes on with
/// their payload, give the quiet NaN.
#[cfg(target_arch = "x86_64")]
#[test]
fn the_scalar_binary16_rounding_is_the_processors() {
    if !std::arch::is_x86_feature_detected!("f16c") {
        say!("no F16C here: nothing to compare with");
        return;
    }
    #[target_feature(enable = "avx,f16c")]
    fn f16c(x: [f32; 8]) -> [u16; 8] {
        use std::arch::x86_64::*;
        // SAFETY: both arrays are 8 elements (32 and 16 bytes); unaligned load and store.
        unsafe {
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(x.as_ptr()));
            let mut out = [0u16; 8];
            _mm_storeu_si128(out.as_mut_ptr() as *mut __m128i, h);
            out
        }
    }
    let mut bits = 0u32;
    let mut checked = 0u64;
    loop {
        let x: [f32; 8] = std::array::from_fn(|k| f32::from_bits(bits.wrapping_add(k as u32)));
        // SAFETY: the processor has F16C (checked above) and AVX with it.
        let hw = unsafe { f16c(x) };
        for k in 0..8 {
            let want = if x[k].is_nan() { 0x7e00 } else { hw[k] };
            assert_eq!(half::f32_to_f16(x[k]), want, "{:#010x}", x[k].to_bits());
        }
        checked += 8;
        let (next, wrapped) = bits.overflowing_add(4099 * 8);
        if wrapped {
            break;
        }
        bits = next;
    }
    say!("{checked} fp32 values round as F16C rounds them");
}

#[cfg(target_arch = "x86_64")]
fn check_build(kernel: Kernel) {
    fn bits<T: Copy>(v: &[T]) -> Vec<u8> {
        // SAFETY: any initialised slice of plain numbers can be read as bytes.
        unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)).to_vec() }
    }
    fn check<T: Copy>(kernel: Kernel, dt: DataType, ops: &[ReduceOp], a: &[T], b: &[T]) {
        let w = (std::mem::size_of::<T>() * 8) as u32;
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
