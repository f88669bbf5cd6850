//! 16-bit floats: IEEE binary16 (`GOAL_FLOAT`, width 16) and bfloat16
//! (`GOAL_BFLOAT`), and how they combine.
//!
//! # The rounding rule
//!
//! Every combine `r = a op b` of 16-bit floats widens both operands to
//! binary32 (exactly: every binary16 and bfloat16 value, subnormals
//! included, is a binary32 value), applies `op` in binary32 as the
//! processor does by default (round to nearest even, no flush to zero),
//! and rounds the binary32 result once to the 16-bit format, to nearest,
//! ties to even. Consequences:
//!
//! * the result of one combine depends on its two operands only, so every
//!   rank computing it gets the same bits, and a collective equals a
//!   sequential model applying the same pairwise combines in the same order
//!   (each algorithm's order is documented in [`crate::coll`]);
//! * for binary16, ADD, SUB, MUL and DIV give the correctly rounded binary16
//!   result (binary32's 24 bits are at least twice binary16's 11 plus 2, so
//!   the double rounding is innocuous);
//! * overflow rounds to infinity (binary16 values from 65520 up, bfloat16
//!   values past its largest finite one), results below the smallest
//!   subnormal round to a signed zero or the smallest subnormal, as rounding
//!   to nearest even says; bfloat16 has binary32's exponent range;
//! * a NaN result stays a NaN: the quiet NaN `0x7E00` (binary16) or
//!   `0x7FC0` (bfloat16), positive, without payload. Which operand's
//!   payload and sign an fp32 operation on two NaNs passes on is not fixed
//!   (the compiler may swap the operands of a commutative operation, and
//!   vector and scalar code do), so keeping it would make the bits depend
//!   on the kernel that ran;
//! * MAX and MIN follow the rule of the 32- and 64-bit floats: a NaN operand
//!   gives the other operand (IEEE maxNum/minNum; NaN only if both are), and
//!   of two equal operands (`-0` and `+0`) the first;
//! * COPY copies bits, converting nothing.
//!
//! The functions here are the scalar reference: the runtime's portable
//! kernels use them, its vector kernels are tested to give the same bits,
//! and [`crate::sim`] computes with them.

use crate::ReduceOp;

/// The binary32 value of binary16 bits `h` (exact).
#[inline]
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exp = (h >> 10) & 0x1f;
    let man = (h & 0x3ff) as u32;
    match exp {
        // Subnormal or zero: man * 2^-24, exact in binary32.
        0 => f32::from_bits(sign | (man as f32 * f32::from_bits(0x3380_0000)).to_bits()),
        // Infinity or NaN (NaNs quiet, payload kept).
        0x1f => f32::from_bits(sign | 0x7f80_0000 | if man != 0 { 0x0040_0000 | man << 13 } else { 0 }),
        _ => f32::from_bits(sign | (exp as u32 + 112) << 23 | man << 13),
    }
}

/// `x` rounded to binary16, to nearest, ties to even; a NaN gives `0x7E00`.
#[inline]
pub fn f32_to_f16(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let abs = bits & 0x7fff_ffff;
    let h = if abs > 0x7f80_0000 {
        return 0x7e00;
    } else if abs >= 0x4780_0000 {
        // 2^16 and up (and infinity): past the largest finite value's rounding range.
        0x7c00
    } else if abs < 0x3880_0000 {
        // Below 2^-14: a binary16 subnormal or zero. Adding 0.5 aligns the
        // 10 fraction bits at the bottom of the binary32 (whose ulp is then
        // 2^-24); the addition rounds to nearest even.
        let magic = f32::from_bits(0x3f00_0000);
        ((f32::from_bits(abs) + magic).to_bits() - magic.to_bits()) as u16
    } else {
        // Normal: rebias the exponent and round the 13 dropped bits
        // (a carry into the exponent, up to infinity, is right).
        let odd = (abs >> 13) & 1;
        ((abs - ((127 - 15) << 23) + 0xfff + odd) >> 13) as u16
    };
    sign | h
}

/// The binary32 value of bfloat16 bits `h` (exact: the upper half).
#[inline]
pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// `x` rounded to bfloat16, to nearest, ties to even; a NaN gives `0x7FC0`.
#[inline]
pub fn f32_to_bf16(x: f32) -> u16 {
    let bits = x.to_bits();
    if bits & 0x7fff_ffff > 0x7f80_0000 {
        return 0x7fc0;
    }
    ((bits + 0x7fff + ((bits >> 16) & 1)) >> 16) as u16
}

/// `op` on two widened operands, in binary32, as the rule above says.
/// `Copy` returns `x`.
///
/// # Panics
/// On the bitwise operators and `Wtime`, which no float takes.
#[inline]
pub fn combine_f32(op: ReduceOp, x: f32, y: f32) -> f32 {
    match op {
        ReduceOp::Add => x + y,
        ReduceOp::Sub => x - y,
        ReduceOp::Mul => x * y,
        ReduceOp::Div => x / y,
        // As x86's `maxps(y, x)` after a NaN check of x, which is what the
        // compiler makes of f32::max: the vector kernels use exactly that.
        ReduceOp::Max => {
            if x.is_nan() || y > x {
                y
            } else {
                x
            }
        }
        ReduceOp::Min => {
            if x.is_nan() || y < x {
                y
            } else {
                x
            }
        }
        ReduceOp::Copy => x,
        ReduceOp::And | ReduceOp::Or | ReduceOp::Xor | ReduceOp::Wtime => unreachable!("no float takes {}", op.name()),
    }
}

/// One combine of binary16 bits.
#[inline]
pub fn combine_f16(op: ReduceOp, a: u16, b: u16) -> u16 {
    if op == ReduceOp::Copy {
        return a;
    }
    f32_to_f16(combine_f32(op, f16_to_f32(a), f16_to_f32(b)))
}

/// One combine of bfloat16 bits.
#[inline]
pub fn combine_bf16(op: ReduceOp, a: u16, b: u16) -> u16 {
    if op == ReduceOp::Copy {
        return a;
    }
    f32_to_bf16(combine_f32(op, bf16_to_f32(a), bf16_to_f32(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of binary16 bits, computed from the definition in f64.
    fn f16_value(h: u16) -> f64 {
        let s = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
        let e = ((h >> 10) & 0x1f) as i32;
        let m = (h & 0x3ff) as f64;
        match e {
            0 => s * m * 2f64.powi(-24),
            0x1f if m == 0.0 => s * f64::INFINITY,
            0x1f => f64::NAN,
            _ => s * (1.0 + m / 1024.0) * 2f64.powi(e - 15),
        }
    }

    #[test]
    fn every_f16_widens_exactly_and_rounds_back_to_itself() {
        for h in 0..=u16::MAX {
            let w = f16_to_f32(h);
            let v = f16_value(h);
            if v.is_nan() {
                assert!(w.is_nan(), "{h:#06x}");
                assert_eq!(f32_to_f16(w), 0x7e00, "{h:#06x}: a NaN comes back as the quiet NaN");
            } else {
                assert_eq!(w as f64, v, "{h:#06x}");
                assert_eq!(w.is_sign_negative(), h & 0x8000 != 0, "{h:#06x}");
                assert_eq!(f32_to_f16(w), h, "{h:#06x}");
            }
            let b = bf16_to_f32(h);
            assert_eq!(b.to_bits() >> 16, h as u32);
            assert_eq!(f32_to_bf16(b), if b.is_nan() { 0x7fc0 } else { h }, "{h:#06x}");
        }
    }

    /// Between every two neighbouring binary16 values: the midpoint goes to
    /// the even one, a binary32 ulp either side to the nearer one.
    #[test]
    fn f16_rounds_to_nearest_ties_to_even() {
        for h in 0..0x7bffu16 {
            let (lo, hi) = (f16_to_f32(h), f16_to_f32(h + 1));
            let mid = ((lo as f64 + hi as f64) / 2.0) as f32;
            assert_eq!((mid as f64) * 2.0, lo as f64 + hi as f64, "{h:#06x}: the midpoint is a binary32");
            let even = if h & 1 == 0 { h } else { h + 1 };
            for sign in [0u16, 0x8000] {
                let neg = |x: f32| if sign != 0 { -x } else { x };
                assert_eq!(f32_to_f16(neg(mid)), even | sign, "{h:#06x} tie");
                assert_eq!(f32_to_f16(neg(f32::from_bits(mid.to_bits() - 1))), h | sign, "{h:#06x} below the tie");
                assert_eq!(f32_to_f16(neg(f32::from_bits(mid.to_bits() + 1))), (h + 1) | sign, "{h:#06x} above the tie");
            }
        }
        // The largest finite value and infinity: 65520 is the tie, to even (infinity).
        assert_eq!(f32_to_f16(65519.996), 0x7bff);
        assert_eq!(f32_to_f16(65520.0), 0x7c00);
        assert_eq!(f32_to_f16(1e30), 0x7c00);
        assert_eq!(f32_to_f16(f32::NEG_INFINITY), 0xfc00);
        // Half the smallest subnormal is a tie to zero; a bit more rounds up.
        assert_eq!(f32_to_f16(2f32.powi(-25)), 0);
        assert_eq!(f32_to_f16(-2f32.powi(-25) * 1.0000001), 0x8001);
        assert_eq!(f32_to_f16(f32::from_bits(1)), 0);
    }

    #[test]
    fn bf16_rounds_to_nearest_ties_to_even() {
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f80_8000)), 0x3f80, "tie, down to even");
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f81_8000)), 0x3f82, "tie, up to even");
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f80_8001)), 0x3f81);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f80_7fff)), 0x3f80);
        assert_eq!(f32_to_bf16(f32::MAX), 0x7f80, "past the largest bfloat16: infinity");
        assert_eq!(f32_to_bf16(f32::from_bits(0x0000_8000)), 0x0000, "subnormal tie to even zero");
        assert_eq!(f32_to_bf16(f32::from_bits(0x8001_8000)), 0x8002, "negative subnormal tie up to even");
        assert_eq!(f32_to_bf16(f32::from_bits(0x7f80_0001)), 0x7fc0, "a signalling NaN comes out quiet");
        assert_eq!(f32_to_bf16(f32::from_bits(0xffc1_2345)), 0x7fc0, "without sign or payload");
    }

    #[test]
    fn combines_follow_the_rule() {
        let one = 0x3c00;
        // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: to even, 1.
        assert_eq!(combine_f16(ReduceOp::Add, one, 0x1000), one);
        // 1 + 3 * 2^-11 is a tie too: up to even, 1 + 2^-9.
        assert_eq!(combine_f16(ReduceOp::Add, 0x3c01, 0x1000), 0x3c02);
        assert_eq!(combine_f16(ReduceOp::Add, 0x7bff, 0x7bff), 0x7c00, "overflow to infinity");
        assert_eq!(combine_f16(ReduceOp::Add, 0x7c00, 0xfc00), 0x7e00, "inf - inf is the quiet NaN");
        assert_eq!(combine_f16(ReduceOp::Add, 0xfd01, 0x3c00), 0x7e00, "a NaN operand gives the quiet NaN");
        assert_eq!(combine_f16(ReduceOp::Mul, 0x0001, 0x3800), 0x0000, "2^-25: a tie to zero");
        assert_eq!(combine_f16(ReduceOp::Max, 0x7e00, one), one, "max of NaN and 1 is 1");
        assert_eq!(combine_f16(ReduceOp::Min, one, 0x7e00), one);
        assert_eq!(combine_f16(ReduceOp::Max, 0x8000, 0x0000), 0x8000, "of equal operands, the first");
        assert_eq!(combine_bf16(ReduceOp::Add, 0x3f80, 0x3b80), 0x3f80, "1 + 2^-8: tie to even");
        assert_eq!(combine_bf16(ReduceOp::Div, 0x3f80, 0x0000), 0x7f80);
        assert_eq!(combine_bf16(ReduceOp::Copy, 0x7f81, 0), 0x7f81, "COPY converts nothing");
    }
}
