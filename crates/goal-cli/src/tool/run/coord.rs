//! The ranks' own coordination around a text schedule: two small goal
//! schedules, compiled before the file's, so that every rank numbers them
//! alike whatever happens to the file's compile.
//!
//! `up` gathers a few `f64` per rank at rank 0; `down` broadcasts one `f64`
//! from rank 0. Together they are an agreement (the worst status of any
//! rank, known everywhere) and a barrier. Both are linear in the ranks
//! (rank 0 receives and sends one message per rank): fine for the job sizes
//! a file is run at, and outside every timed region.

use std::sync::Arc;

use goal_rt::{Runtime, Schedule};
use goal_sched::{Buf, Graph};

/// The coordination schedules and their buffers (fixed addresses: the
/// schedules name them).
pub(super) struct Coord {
    me: u32,
    n: u32,
    /// Slots per rank in `up`.
    k: usize,
    /// This rank's slots.
    mine: Box<[f64]>,
    /// On rank 0, every rank's slots (rank r at `r * k`).
    all: Box<[f64]>,
    /// The broadcast value.
    down: Box<[f64; 1]>,
    /// `None` with a single rank.
    scheds: Option<(Schedule, Schedule)>,
}

impl Coord {
    /// Compiles the two schedules, `k` slots per rank.
    pub(super) fn new(rt: &Runtime, k: usize) -> goal_rt::Result<Coord> {
        let (me, n) = (rt.rank(), rt.size());
        let mut s = Coord {
            me,
            n,
            k,
            mine: vec![0.0; k].into_boxed_slice(),
            all: vec![0.0; if me == 0 { k * n as usize } else { 0 }].into_boxed_slice(),
            down: Box::new([0.0]),
            scheds: None,
        };
        if n == 1 {
            return Ok(s);
        }
        let bytes = (8 * k) as i64;
        let (mut up, mut down) = (Graph::new(), Graph::new());
        let at = |p: *const f64| Buf::user(p as u64);
        if me == 0 {
            for r in 1..n {
                up.recv(at(s.all[r as usize * k..].as_ptr()), bytes, r as i64, 1);
                down.send(at(s.down.as_ptr()), 8, r as i64, 2);
            }
        } else {
            up.send(at(s.mine.as_ptr()), bytes, 0, 1);
            down.recv(at(s.down.as_ptr()), 8, 0, 2);
        }
        s.scheds = Some((rt.compile(&up)?, rt.compile(&down)?));
        Ok(s)
    }

    /// Runs `s` to its end.
    fn run(rt: &Arc<Runtime>, s: &Schedule) -> goal_rt::Result<()> {
        // SAFETY: the schedules name only `mine`, `all` and `down`, boxed
        // and owned by `self` (which the caller borrows mutably, so nothing
        // else reads or writes them), and the execution is waited for here.
        unsafe { rt.run(s) }?.wait()
    }

    /// Gathers `values` (at most `k`) of every rank at rank 0: there, the
    /// slots of each rank; elsewhere, `None`.
    pub(super) fn gather(&mut self, rt: &Arc<Runtime>, values: &[f64]) -> goal_rt::Result<Option<Vec<Vec<f64>>>> {
        self.mine.fill(0.0);
        self.mine[..values.len()].copy_from_slice(values);
        if let Some((up, _)) = &self.scheds {
            Self::run(rt, up)?;
        }
        if self.me != 0 {
            return Ok(None);
        }
        self.all[..self.k].copy_from_slice(&self.mine);
        Ok(Some(self.all.chunks(self.k).map(<[f64]>::to_vec).take(self.n as usize).collect()))
    }

    /// The largest `status` of any rank, known on every rank, and on rank 0
    /// each rank's: an agreement, and a barrier.
    pub(super) fn agree(&mut self, rt: &Arc<Runtime>, status: u32) -> goal_rt::Result<(u32, Vec<u32>)> {
        let all: Vec<u32> = self.gather(rt, &[status as f64])?.map(|v| v.iter().map(|r| r[0] as u32).collect()).unwrap_or_default();
        self.down[0] = all.iter().copied().max().unwrap_or(0) as f64;
        if let Some((_, down)) = &self.scheds {
            Self::run(rt, down)?;
        }
        Ok((self.down[0] as u32, all))
    }
}
