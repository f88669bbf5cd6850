//! The model's local operations: what the runtime's kernels compute, element
//! by element, written plainly (wrapping integers, IEEE floats, 16-bit floats
//! through [`crate::half`]).

use crate::{DataType, ReduceOp};

/// `out[i] = a[i] op b[i]` with the runtime kernels' semantics; `Err(i)`:
/// integer division by zero at element `i` (elements before it are written).
pub(super) fn kernel(op: ReduceOp, dt: DataType, width: u32, a: &[u8], b: &[u8], out: &mut [u8]) -> Result<(), usize> {
    if op == ReduceOp::Copy {
        out.copy_from_slice(a);
        return Ok(());
    }
    macro_rules! int {
        ($t:ty) => {{
            const W: usize = std::mem::size_of::<$t>();
            for (i, o) in out.chunks_exact_mut(W).enumerate() {
                let x = <$t>::from_ne_bytes(a[i * W..(i + 1) * W].try_into().unwrap());
                let y = <$t>::from_ne_bytes(b[i * W..(i + 1) * W].try_into().unwrap());
                let z = match op {
                    ReduceOp::Max => {
                        if x > y {
                            x
                        } else {
                            y
                        }
                    }
                    ReduceOp::Min => {
                        if x < y {
                            x
                        } else {
                            y
                        }
                    }
                    ReduceOp::Add => x.wrapping_add(y),
                    ReduceOp::Sub => x.wrapping_sub(y),
                    ReduceOp::Mul => x.wrapping_mul(y),
                    ReduceOp::And => x & y,
                    ReduceOp::Or => x | y,
                    ReduceOp::Xor => x ^ y,
                    ReduceOp::Div => {
                        if y == 0 {
                            return Err(i);
                        }
                        x.wrapping_div(y)
                    }
                    ReduceOp::Copy | ReduceOp::Wtime => unreachable!(),
                };
                o.copy_from_slice(&z.to_ne_bytes());
            }
            Ok(())
        }};
    }
    macro_rules! float {
        ($t:ty) => {{
            const W: usize = std::mem::size_of::<$t>();
            for (i, o) in out.chunks_exact_mut(W).enumerate() {
                let x = <$t>::from_ne_bytes(a[i * W..(i + 1) * W].try_into().unwrap());
                let y = <$t>::from_ne_bytes(b[i * W..(i + 1) * W].try_into().unwrap());
                let z = match op {
                    ReduceOp::Max => x.max(y),
                    ReduceOp::Min => x.min(y),
                    ReduceOp::Add => x + y,
                    ReduceOp::Sub => x - y,
                    ReduceOp::Mul => x * y,
                    ReduceOp::Div => x / y,
                    _ => unreachable!("refused by the compiler"),
                };
                o.copy_from_slice(&z.to_ne_bytes());
            }
            Ok(())
        }};
    }
    macro_rules! half {
        ($combine:path) => {{
            for (i, o) in out.chunks_exact_mut(2).enumerate() {
                let x = u16::from_ne_bytes([a[2 * i], a[2 * i + 1]]);
                let y = u16::from_ne_bytes([b[2 * i], b[2 * i + 1]]);
                o.copy_from_slice(&$combine(op, x, y).to_ne_bytes());
            }
            Ok(())
        }};
    }
    match (dt, width) {
        (DataType::SInt, 8) => int!(i8),
        (DataType::SInt, 16) => int!(i16),
        (DataType::SInt, 32) => int!(i32),
        (DataType::SInt, 64) => int!(i64),
        (DataType::UInt, 8) => int!(u8),
        (DataType::UInt, 16) => int!(u16),
        (DataType::UInt, 32) => int!(u32),
        (DataType::UInt, 64) => int!(u64),
        (DataType::Float, 32) => float!(f32),
        (DataType::Float, 64) => float!(f64),
        (DataType::Float, 16) => half!(crate::half::combine_f16),
        (DataType::BFloat, 16) => half!(crate::half::combine_bf16),
        _ => unreachable!("refused by the compiler"),
    }
}
