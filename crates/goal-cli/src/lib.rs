//! goal-cli library part: the `goal` command's logic ([`tool`]), kept here so
//! that `src/bin/goal.rs` is only its entry point. (goalrun's launcher is
//! compiled into its binary from `src/launch/`.)
//!
//! In the layer picture of `docs/design.md` this crate launches: `goalrun`
//! starts the ranks of a job on one machine and serves goal-boot's
//! bootstrap socket to them; `goal` is the entry for goal's tools (`bench`,
//! `tune`, `check`). Neither sits on a rank's path of messages.

pub mod tool;
