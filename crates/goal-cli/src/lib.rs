//! goal-cli library part.
