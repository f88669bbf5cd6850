//! Groups: subsets of the job's ranks with a matching space of their own.
//!
//! A [`Group`] is an ordered list of the job's ranks (its members, by
//! group rank) and a *context*, a 16-bit number that every member agrees
//! on and that travels in every envelope (see `proto`). A schedule compiled
//! on a group takes its id from the group's context and the group's own
//! compile count, so the contract's matching rules hold per group: the
//! members compile the group's schedules in the same order, whatever else
//! they compile meanwhile, and executions of different groups never match
//! each other's messages. The world group is context 0, so a program that
//! never makes a group runs exactly as before groups existed.
//!
//! # Agreeing on a context without a server
//!
//! Each process keeps a bitmap of the contexts its live groups hold
//! ([`Contexts`], [`CONTEXTS`] of them). Creating a group is one allgather
//! over the ranks that take part (the whole parent for a split, the listed
//! ranks for a creation from a list): each contributes its free contexts
//! (and, for a split, its colour and key), and every member of a new group
//! takes the lowest context free on all of that group's members. It is a
//! context that none of them uses, so no member can confuse the new group's
//! messages with another group's; ranks outside the group may use the same
//! context for a group of their own, which no member of this one belongs
//! to. A freed group gives its context back once its last schedule is
//! freed too, so thousands of groups over a run need no more than the
//! groups alive at once.
//!
//! Creations from several threads at once claim the free contexts they
//! offer until they end, so two never take the same; one that finds no
//! context free (the others claimed them) tries again once they are done.
//!
//! A split is collective over the parent and counts in the parent's
//! compile order (its allgather is a schedule of the parent). A creation
//! from a list involves only the listed ranks, so its allgather cannot be
//! one of the parent's schedules: it runs in a context reserved for
//! creations ([`CREATION_CONTEXT`]), numbered by the list, the parent, the
//! caller's tag and how many such creations the caller made before (each
//! member counts the same ones).

use crate::error::{Error, ErrorKind, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// How many contexts there are to hand out (context 0 is the world's).
pub const CONTEXTS: usize = 2048;
const WORDS: usize = CONTEXTS / 64;

/// The context in which creations from a list exchange their offers: never
/// a group's.
pub(crate) const CREATION_CONTEXT: u16 = u16::MAX;

/// This process' contexts: taken by a live group, or offered by a creation
/// in progress.
pub(crate) struct Contexts {
    state: Mutex<CtxState>,
    /// Signalled when a creation ends (its claim is released).
    done: Condvar,
}

struct CtxState {
    /// Bit c: context c belongs to a live group here.
    taken: [u64; WORDS],
    /// Bit c: a creation in progress offered context c.
    claimed: [u64; WORDS],
    /// Creations in progress.
    creating: u32,
}

impl Contexts {
    pub(crate) fn new() -> Arc<Contexts> {
        let mut taken = [0u64; WORDS];
        taken[0] = 1; // the world group's
        Arc::new(Contexts { state: Mutex::new(CtxState { taken, claimed: [0; WORDS], creating: 0 }), done: Condvar::new() })
    }

    /// A creation starts: the contexts it may offer, now claimed for it, and
    /// whether other creations are in progress here (holding claims).
    fn claim(&self) -> ([u64; WORDS], bool) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let others = st.creating > 0;
        st.creating += 1;
        let mut offer = [0u64; WORDS];
        for (w, o) in offer.iter_mut().enumerate() {
            *o = !(st.taken[w] | st.claimed[w]);
            st.claimed[w] |= *o;
        }
        (offer, others)
    }

    /// A creation ends: gives back what it offered, and takes `chosen`.
    fn settle(&self, offer: &[u64; WORDS], chosen: Option<u16>) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for (claimed, o) in st.claimed.iter_mut().zip(offer) {
            *claimed &= !o;
        }
        if let Some(c) = chosen {
            st.taken[c as usize / 64] |= 1 << (c % 64);
        }
        st.creating -= 1;
        self.done.notify_all();
    }

    /// Waits (a little) until no other creation is in progress here.
    fn wait_for_others(&self) {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let _ = self.done.wait_timeout_while(st, std::time::Duration::from_millis(50), |st| st.creating > 0);
    }

    /// Context `c`'s group is gone.
    fn release(&self, c: u16) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.taken[c as usize / 64] &= !(1 << (c % 64));
    }

    /// Contexts in use (live groups, the world's included).
    #[cfg(test)]
    fn in_use(&self) -> usize {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.taken.iter().map(|w| w.count_ones() as usize).sum()
    }
}

/// The lowest context set in every offer, if any.
fn lowest_common<'a>(offers: impl Iterator<Item = &'a [u64; WORDS]>) -> Option<u16> {
    let mut all = [u64::MAX; WORDS];
    for o in offers {
        for w in 0..WORDS {
            all[w] &= o[w];
        }
    }
    all.iter().enumerate().find(|(_, w)| **w != 0).map(|(i, w)| (i * 64 + w.trailing_zeros() as usize) as u16)
}

/// A group of ranks (see the module's doc). Cheap to clone: clones are the
/// same group.
#[derive(Clone)]
pub struct Group {
    pub(crate) inner: Arc<GroupInner>,
}

pub(crate) struct GroupInner {
    /// Its context (0: the world).
    pub(crate) ctx: u16,
    /// The job rank of each member, by group rank.
    pub(crate) members: Arc<[u32]>,
    /// This process' rank in the group.
    pub(crate) rank: u32,
    /// Schedules compiled on it so far (the next one's number).
    pub(crate) next_sched: AtomicU32,
    /// The application freed it: nothing new may be made or run on it.
    pub(crate) freed: AtomicBool,
    /// Creations from a list made with this group as parent, by (list,
    /// tag): how many each caller made before (see the module's doc).
    creations: Mutex<HashMap<(u64, i32), u32>>,
    contexts: Arc<Contexts>,
}

impl Drop for GroupInner {
    fn drop(&mut self) {
        // The last handle and the last schedule compiled on it are gone:
        // nothing of this group can be in flight any more.
        if self.ctx != 0 && (self.ctx as usize) < CONTEXTS {
            self.contexts.release(self.ctx);
        }
    }
}

impl Group {
    pub(crate) fn world(size: u32, rank: u32, contexts: Arc<Contexts>) -> Group {
        Group::new(0, (0..size).collect(), rank, contexts)
    }

    fn new(ctx: u16, members: Arc<[u32]>, rank: u32, contexts: Arc<Contexts>) -> Group {
        Group {
            inner: Arc::new(GroupInner {
                ctx,
                members,
                rank,
                next_sched: AtomicU32::new(0),
                freed: AtomicBool::new(false),
                creations: Mutex::new(HashMap::new()),
                contexts,
            }),
        }
    }

    /// Number of members.
    pub fn size(&self) -> u32 {
        self.inner.members.len() as u32
    }

    /// This process' rank in the group.
    pub fn rank(&self) -> u32 {
        self.inner.rank
    }

    /// The job (world) rank of member `r`.
    pub fn world_rank(&self, r: u32) -> Option<u32> {
        self.inner.members.get(r as usize).copied()
    }

    /// The job ranks of the members, by group rank.
    pub fn members(&self) -> &[u32] {
        &self.inner.members
    }

    /// The context the group's messages carry (0: the world group).
    pub fn context(&self) -> u16 {
        self.inner.ctx
    }

    /// The rank in `other` of each of `ranks` (ranks of this group); `None`
    /// for a member that `other` does not hold.
    pub fn translate(&self, ranks: &[u32], other: &Group) -> Result<Vec<Option<u32>>> {
        let n = self.size();
        ranks
            .iter()
            .map(|&r| {
                let w = self.world_rank(r).ok_or_else(|| Error::new(ErrorKind::Rank, format!("rank {r} is outside the group of {n} ranks")))?;
                Ok(other.inner.members.iter().position(|&m| m == w).map(|p| p as u32))
            })
            .collect()
    }

    /// Whether it is the same group as `other` (the same handle's clones).
    pub fn same(&self, other: &Group) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Marks the group freed: compiling, creating groups from it and
    /// running its schedules fail from now on. Its context is given back
    /// once its schedules are freed too.
    pub fn free(&self) -> Result<()> {
        if self.inner.ctx == 0 {
            return Err(Error::new(ErrorKind::InvalidArgument, "the world group cannot be freed"));
        }
        if self.inner.freed.swap(true, Ordering::AcqRel) {
            return Err(Error::new(ErrorKind::InvalidArgument, "the group was freed already"));
        }
        Ok(())
    }

    /// Whether [`free`](Self::free) was called.
    pub fn is_freed(&self) -> bool {
        self.inner.freed.load(Ordering::Acquire)
    }

    /// An error for `what` if the group was freed.
    pub(crate) fn check_live(&self, what: &str) -> Result<()> {
        if self.is_freed() {
            return Err(Error::new(ErrorKind::InvalidArgument, format!("{what}: the group (context {}) was freed", self.inner.ctx)));
        }
        Ok(())
    }

    /// The next schedule number of this group.
    pub(crate) fn next_number(&self) -> u32 {
        self.inner.next_sched.fetch_add(1, Ordering::Relaxed)
    }
}

/// What a creation's ranks exchange: whether other creations were in
/// progress at the caller (a word), then its free contexts.
const OFFER_RECORD: usize = 8 + WORDS * 8;
/// What a split's members exchange: colour, key, then an offer record.
const SPLIT_RECORD: usize = 8 + OFFER_RECORD;

/// `offer` and whether `others` were in progress, as exchanged.
fn offer_record(offer: &[u64; WORDS], others: bool, out: &mut [u8]) {
    out[..8].copy_from_slice(&(others as u64).to_le_bytes());
    offer_bytes(offer, &mut out[8..]);
}

/// The lowest context free on all of `records` (offer records), or, if
/// none is, whether to try again: some rank had other creations in
/// progress, whose claims may have hidden free contexts (every rank of
/// the new group reads the same records, so all decide alike).
fn choose(records: &[&[u8]]) -> std::result::Result<u16, bool> {
    let offers: Vec<[u64; WORDS]> = records.iter().map(|r| offer_of(&r[8..])).collect();
    lowest_common(offers.iter()).ok_or_else(|| records.iter().any(|r| r[0] != 0))
}

fn offer_bytes(offer: &[u64; WORDS], out: &mut [u8]) {
    for (w, v) in offer.iter().enumerate() {
        out[w * 8..w * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
}

fn offer_of(b: &[u8]) -> [u64; WORDS] {
    let mut o = [0u64; WORDS];
    for (w, v) in o.iter_mut().enumerate() {
        *v = u64::from_le_bytes(b[w * 8..w * 8 + 8].try_into().unwrap());
    }
    o
}

/// A 64-bit FNV-1a hash of `words`.
fn hash_words(words: impl Iterator<Item = u64>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for w in words {
        for b in w.to_le_bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

impl crate::Runtime {
    /// The group of every rank of the job.
    pub fn world(&self) -> Group {
        self.world.clone()
    }

    /// Runs an allgather of `mine` over `grp` (a schedule of its own,
    /// numbered `id` if given, else the group's next) and returns every
    /// member's record, by group rank.
    fn exchange(self: &Arc<Self>, grp: &Group, id: Option<u32>, mine: &[u8]) -> Result<Vec<u8>> {
        let n = grp.size() as usize;
        let mut all = vec![0u8; n * mine.len()];
        let mut g = goal_sched::Graph::new();
        let at = goal_sched::coll::Placement { tag_base: 1 << 30 };
        let me = goal_sched::coll::Group { rank: grp.rank(), size: grp.size() };
        goal_sched::coll::allgather(&mut g, me, at, mine.as_ptr() as u64, mine.len() as u64, all.as_mut_ptr() as u64, goal_sched::coll::Algorithm::Auto)
            .map_err(|e| Error::new(ErrorKind::System, format!("building the group exchange: {e:?}")))?;
        let s = self.compile_numbered(grp, &g, id)?;
        // SAFETY: `mine` and `all` live until the execution has finished
        // (we wait for it here, and a failed wait has finished too).
        unsafe { self.run(&s) }?.wait()?;
        drop(s);
        Ok(all)
    }

    /// Splits `parent` by colour and key, as `MPI_Comm_split` does: the
    /// members that give the same colour form a group, ordered by key and
    /// then by rank in `parent`. A negative colour takes part in the
    /// exchange and gets no group (`None`). Collective over `parent`, and
    /// counted in its compile order.
    pub fn split(self: &Arc<Self>, parent: &Group, color: i32, key: i32) -> Result<Option<Group>> {
        parent.check_live("splitting a group")?;
        loop {
            let (offer, others) = self.world.inner.contexts.claim();
            let mut mine = vec![0u8; SPLIT_RECORD];
            mine[..4].copy_from_slice(&color.to_le_bytes());
            mine[4..8].copy_from_slice(&key.to_le_bytes());
            offer_record(&offer, others, &mut mine[8..]);
            let all = match self.exchange(parent, None, &mine) {
                Ok(all) => all,
                Err(e) => {
                    self.world.inner.contexts.settle(&offer, None);
                    return Err(e);
                }
            };
            let rec = |r: usize| &all[r * SPLIT_RECORD..(r + 1) * SPLIT_RECORD];
            let word = |r: usize, at: usize| i32::from_le_bytes(rec(r)[at..at + 4].try_into().unwrap());
            // Each colour's members by (key, parent rank), and its choice.
            // Every rank decides for every colour alike, so that if one
            // colour must try again, the whole parent does (the exchange is
            // a schedule of the parent).
            let mut colors: Vec<i32> = (0..parent.size() as usize).map(|r| word(r, 0)).filter(|&c| c >= 0).collect();
            colors.sort_unstable();
            colors.dedup();
            let mates_of = |c: i32| {
                let mut m: Vec<(i32, u32)> = (0..parent.size() as usize).filter(|&r| word(r, 0) == c).map(|r| (word(r, 4), r as u32)).collect();
                m.sort();
                m
            };
            let choice_of = |m: &[(i32, u32)]| choose(&m.iter().map(|&(_, r)| &rec(r as usize)[8..]).collect::<Vec<_>>());
            if colors.iter().any(|&c| choice_of(&mates_of(c)) == Err(true)) {
                self.world.inner.contexts.settle(&offer, None);
                self.world.inner.contexts.wait_for_others();
                continue;
            }
            if color < 0 {
                self.world.inner.contexts.settle(&offer, None);
                return Ok(None);
            }
            let mates = mates_of(color);
            let Ok(ctx) = choice_of(&mates) else {
                self.world.inner.contexts.settle(&offer, None);
                return Err(no_context(mates.len()));
            };
            self.world.inner.contexts.settle(&offer, Some(ctx));
            let members: Arc<[u32]> = mates.iter().map(|&(_, r)| parent.inner.members[r as usize]).collect();
            let rank = mates.iter().position(|&(_, r)| r == parent.rank()).unwrap() as u32;
            return Ok(Some(Group::new(ctx, members, rank, self.world.inner.contexts.clone())));
        }
    }

    /// The group of `ranks` (ranks of `parent`, in the new group's order).
    /// Collective over the listed ranks only, which must all list the same
    /// ranks and give the same `tag`; the other members of `parent` take no
    /// part (as `MPI_Comm_create_group`). Two creations in progress at once
    /// on overlapping ranks must differ in their lists or tags.
    pub fn create_group(self: &Arc<Self>, parent: &Group, ranks: &[i64], tag: i32) -> Result<Group> {
        parent.check_live("creating a group")?;
        let n = parent.size();
        let mut seen = vec![false; n as usize];
        let mut members = Vec::with_capacity(ranks.len());
        let mut rank = None;
        for (i, &r) in ranks.iter().enumerate() {
            if r < 0 || r >= n as i64 {
                return Err(Error::new(ErrorKind::Rank, format!("rank {r} (entry {i} of the list) is outside the parent group of {n} ranks")));
            }
            if std::mem::replace(&mut seen[r as usize], true) {
                return Err(Error::new(ErrorKind::InvalidArgument, format!("rank {r} is listed twice (entry {i} of the list)")));
            }
            if r as u32 == parent.rank() {
                rank = Some(i as u32);
            }
            members.push(parent.inner.members[r as usize]);
        }
        let Some(rank) = rank else {
            return Err(Error::new(ErrorKind::Rank, format!("this rank ({} of the parent) is not in the list of {} ranks it creates a group of", parent.rank(), ranks.len())));
        };
        let members: Arc<[u32]> = members.into();
        // The exchange's schedule number: the same on every listed rank.
        let list = hash_words(members.iter().map(|&m| m as u64));
        let count = {
            let mut c = parent.inner.creations.lock().unwrap_or_else(|e| e.into_inner());
            let k = c.entry((list, tag)).or_insert(0);
            *k += 1;
            *k - 1
        };
        let id = hash_words([list, parent.inner.ctx as u64, tag as u32 as u64, count as u64].into_iter()) as u32;
        let scratch = Group::new(CREATION_CONTEXT, members.clone(), rank, self.world.inner.contexts.clone());
        loop {
            let (offer, others) = self.world.inner.contexts.claim();
            let mut mine = vec![0u8; OFFER_RECORD];
            offer_record(&offer, others, &mut mine);
            let all = match self.exchange(&scratch, Some(id), &mine) {
                Ok(all) => all,
                Err(e) => {
                    self.world.inner.contexts.settle(&offer, None);
                    return Err(e);
                }
            };
            let records: Vec<&[u8]> = all.chunks(OFFER_RECORD).collect();
            let ctx = match choose(&records) {
                Ok(ctx) => ctx,
                Err(again) => {
                    self.world.inner.contexts.settle(&offer, None);
                    if again {
                        self.world.inner.contexts.wait_for_others();
                        continue;
                    }
                    return Err(no_context(members.len()));
                }
            };
            self.world.inner.contexts.settle(&offer, Some(ctx));
            return Ok(Group::new(ctx, members, rank, self.world.inner.contexts.clone()));
        }
    }
}

fn no_context(n: usize) -> Error {
    Error::new(
        ErrorKind::Busy,
        format!("no group context is free on all {n} ranks of the new group ({CONTEXTS} contexts; free groups no longer used, and their schedules)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_creations_never_offer_the_same_context() {
        let c = Contexts::new();
        let (a, first_alone) = c.claim();
        let (b, second_alone) = c.claim();
        assert!(!first_alone && second_alone, "the second creation knows of the first");
        for w in 0..WORDS {
            assert_eq!(a[w] & b[w], 0);
        }
        assert_eq!(lowest_common([&a].into_iter()), Some(1), "context 0 is the world's");
        c.settle(&a, Some(1));
        c.settle(&b, None);
        let (d, _) = c.claim();
        assert_eq!(lowest_common([&d].into_iter()), Some(2), "context 1 is taken now");
        c.settle(&d, None);
        c.release(1);
        let (e, _) = c.claim();
        assert_eq!(lowest_common([&e].into_iter()), Some(1), "a released context is offered again");
        c.settle(&e, None);
        assert_eq!(c.in_use(), 1);
    }

    #[test]
    fn the_lowest_context_free_everywhere_is_chosen() {
        let mut x = [0u64; WORDS];
        let mut y = [0u64; WORDS];
        x[0] = 0b1100;
        y[0] = 0b1010;
        y[3] = 1;
        assert_eq!(lowest_common([&x, &y].into_iter()), Some(3));
        x[0] = 0b0100;
        assert_eq!(lowest_common([&x, &y].into_iter()), None);
    }
}
