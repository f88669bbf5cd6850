//! goal-cli library part: the `goal` command's logic ([`tool`]), kept here so
//! that `src/bin/goal.rs` is only its entry point. (goalrun's launcher is
//! compiled into its binary from `src/launch/`.)

pub mod tool;
