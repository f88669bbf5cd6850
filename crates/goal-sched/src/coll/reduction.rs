//! The element-wise operation of a reducing collective ([`Reduction`]),
//! and which algorithms an operator that does not commute may use.
//!
//! Every algorithm combines the *lower* part (in its rank order) as the
//! first operand, but only some keep the ranks' own order overall: those
//! are [`keeps_order`], and [`resolve_for`] lets a non-commutative user
//! operator have no other. The order of operations of each algorithm is
//! documented with its collective.

use super::{algorithms, auto, describe, resolve, Algorithm, Coll, CollError};
use crate::ops::check_local;
use crate::{DataType, Op, ReduceOp};

/// The element-wise operation of a reduction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reduction {
    /// The operator: MAX, MIN, ADD, MUL, AND, OR, XOR or a user operator.
    pub op: Op,
    /// The element type.
    pub dt: DataType,
    /// The element width in bits.
    pub width: u32,
}

impl Reduction {
    /// The reduction of `op` over `dt` elements of `width` bits (not checked).
    pub fn new(op: impl Into<Op>, dt: DataType, width: u32) -> Reduction {
        Reduction { op: op.into(), dt, width }
    }

    /// The reduction with C API numbers (operator, data type, width in
    /// bits), checked as [`check`](Self::check) does.
    pub fn from_raw(op: i64, dt: i64, width: i64) -> Result<Reduction, CollError> {
        let (op, dt, width) = check_local(op, dt, width).map_err(CollError::BadArgument)?;
        let red = Reduction { op, dt, width };
        red.check()?;
        Ok(red)
    }

    /// Checks the triple and returns the element size in bytes.
    ///
    /// SUB and DIV are refused because they are not associative (the result
    /// would depend on the algorithm), COPY and WTIME because they do not
    /// combine two values. A user operator is taken to be associative.
    pub fn check(&self) -> Result<u64, CollError> {
        let (op, _, width) = check_local(self.op.raw(), self.dt as i64, self.width as i64).map_err(CollError::BadArgument)?;
        if !matches!(
            op,
            Op::User(_) | Op::Builtin(ReduceOp::Max | ReduceOp::Min | ReduceOp::Add | ReduceOp::Mul | ReduceOp::And | ReduceOp::Or | ReduceOp::Xor)
        ) {
            return Err(CollError::BadArgument(format!(
                "{} cannot reduce: a reduction takes an associative operator (GOAL_MAX, GOAL_MIN, GOAL_ADD, GOAL_MUL, GOAL_AND, GOAL_OR, GOAL_XOR, or a user operation)",
                op.name()
            )));
        }
        Ok(width as u64 / 8)
    }

    /// Whether the operands may be combined in any order: every built-in
    /// reducing operator, and the user operators created commutative.
    pub fn commutative(&self) -> bool {
        match self.op {
            Op::Builtin(_) => true,
            Op::User(u) => u.commutative,
        }
    }
}

/// Whether `alg` combines the ranks' contributions of reducing collective
/// `coll` in rank order, `x_0 op x_1 op ... op x_(size-1)` (bracketed some
/// way), for every group size and root: what a non-commutative operator
/// needs. Those that do not reorder the operands (a ring starts each block
/// after it, a halving pairs distant ranks first).
pub fn keeps_order(coll: Coll, alg: Algorithm) -> bool {
    use Algorithm::*;
    matches!(
        (coll, alg),
        (Coll::Reduce, Linear | Binomial) | (Coll::Allreduce, RecursiveDoubling) | (Coll::ReduceScatterBlock, Linear) | (Coll::ReduceScatter, Linear)
    )
}

/// [`resolve`] for a reducing collective: for an operator that does not
/// commute, `GOAL_ALG_AUTO` picks among the algorithms that keep rank
/// order ([`keeps_order`]) and any other is refused.
pub(crate) fn resolve_for(coll: Coll, alg: Algorithm, size: u32, bytes: u64, red: &Reduction) -> Result<Algorithm, CollError> {
    if red.commutative() || size <= 1 {
        return resolve(coll, alg, size, bytes);
    }
    let ordered: Vec<Algorithm> = algorithms(coll).iter().copied().filter(|&a| keeps_order(coll, a)).collect();
    if alg == Algorithm::Auto {
        let pick = auto(coll, size, bytes);
        // Else the tree for reduce: the root combines log2(size) vectors, not size - 1.
        let fallback = if coll == Coll::Reduce { Algorithm::Binomial } else { ordered[0] };
        return Ok(if ordered.contains(&pick) { pick } else { fallback });
    }
    let alg = resolve(coll, alg, size, bytes)?;
    if ordered.contains(&alg) {
        return Ok(alg);
    }
    let has: Vec<&str> = ordered.iter().map(|&a| a.c_name()).collect();
    Err(CollError::Unsupported(format!(
        "{} ({}) does not combine the ranks in rank order, and {} does not commute: for {} use {} or GOAL_ALG_AUTO",
        alg.c_name(),
        describe(coll, alg),
        red.op.name(),
        coll.name(),
        has.join(" or ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::UserOp;

    /// For a non-commutative operator AUTO picks an order-keeping algorithm
    /// at every group and message size, and the others are refused.
    #[test]
    fn auto_keeps_order_for_an_operator_that_does_not_commute() {
        let red = Reduction::new(Op::User(UserOp { id: 0, commutative: false }), DataType::Bytes, 96);
        for coll in [Coll::Reduce, Coll::Allreduce, Coll::ReduceScatterBlock] {
            for size in 2..=64 {
                for shift in 0..26 {
                    let alg = resolve_for(coll, Algorithm::Auto, size, 1 << shift, &red).unwrap();
                    assert!(keeps_order(coll, alg), "{coll:?} {size} ranks, {} bytes: {alg:?}", 1u64 << shift);
                }
            }
            for &alg in algorithms(coll) {
                assert_eq!(resolve_for(coll, alg, 4, 64, &red).is_ok(), keeps_order(coll, alg), "{coll:?} {alg:?}");
            }
        }
    }
}
