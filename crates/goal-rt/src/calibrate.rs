//! Protocol thresholds measured on the machine goal runs on.
//!
//! Placeholder defaults until the calibration lands.

use crate::engine::Thresholds;

/// The measured (or cached) thresholds; `credit` is filled in by the caller.
pub(crate) fn thresholds(_debug: bool) -> Thresholds {
    Thresholds { eager: 8 << 10, cma: (usize::MAX, 0), credit: 0 }
}
