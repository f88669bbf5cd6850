//! The posted-receive and unexpected-message queues of every host, as
//! LogGOPSim keeps them: one list per host and kind, searched from the
//! oldest entry, the first match taken.
//!
//! The lists of all hosts share one slab of nodes with a free list, so a
//! million hosts cost 16 bytes each (head and tail of both lists) and no
//! allocation per entry.

/// No node.
const NIL: u32 = u32::MAX;

/// One entry: who it is from (or [`crate::program::ANY`]), its tag (or
/// ANY), the operation it stands for (a receive on the owning host, or a
/// send on host `src`), and the next entry of its list.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub src: u32,
    pub tag: u32,
    pub op: u32,
    next: u32,
}

/// One list per host.
#[derive(Debug, Default)]
pub(crate) struct Lists {
    head: Vec<u32>,
    tail: Vec<u32>,
    nodes: Vec<Entry>,
    free: u32,
    len: u64,
}

#[inline]
fn matches(a: u32, b: u32) -> bool {
    a == b || a == crate::program::ANY || b == crate::program::ANY
}

impl Lists {
    pub fn new(hosts: u32) -> Lists {
        Lists { head: vec![NIL; hosts as usize], tail: vec![NIL; hosts as usize], nodes: Vec::new(), free: NIL, len: 0 }
    }

    /// Entries in every list.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn memory(&self) -> u64 {
        (self.head.capacity() * 8 + self.nodes.capacity() * std::mem::size_of::<Entry>()) as u64
    }

    /// Appends an entry to `host`'s list.
    pub fn push(&mut self, host: u32, src: u32, tag: u32, op: u32) {
        let e = Entry { src, tag, op, next: NIL };
        let i = if self.free != NIL {
            let i = self.free;
            self.free = self.nodes[i as usize].next;
            self.nodes[i as usize] = e;
            i
        } else {
            self.nodes.push(e);
            (self.nodes.len() - 1) as u32
        };
        let h = host as usize;
        match self.tail[h] {
            NIL => self.head[h] = i,
            t => self.nodes[t as usize].next = i,
        }
        self.tail[h] = i;
        self.len += 1;
    }

    /// Removes and returns the oldest entry of `host`'s list that matches
    /// (`src`, `tag`), either side's ANY matching anything.
    pub fn take(&mut self, host: u32, src: u32, tag: u32) -> Option<Entry> {
        let h = host as usize;
        let mut prev = NIL;
        let mut i = self.head[h];
        while i != NIL {
            let e = self.nodes[i as usize];
            if matches(e.src, src) && matches(e.tag, tag) {
                match prev {
                    NIL => self.head[h] = e.next,
                    p => self.nodes[p as usize].next = e.next,
                }
                if self.tail[h] == i {
                    self.tail[h] = prev;
                }
                self.nodes[i as usize].next = self.free;
                self.free = i;
                self.len -= 1;
                return Some(e);
            }
            prev = i;
            i = e.next;
        }
        None
    }

    /// The entries of `host`'s list, oldest first.
    pub fn iter(&self, host: u32) -> impl Iterator<Item = Entry> + '_ {
        let mut i = self.head[host as usize];
        std::iter::from_fn(move || {
            if i == NIL {
                return None;
            }
            let e = self.nodes[i as usize];
            i = e.next;
            Some(e)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::ANY;

    #[test]
    fn the_oldest_match_is_taken_and_wildcards_match_either_way() {
        let mut l = Lists::new(2);
        l.push(1, 3, 7, 10);
        l.push(1, ANY, 8, 11);
        l.push(1, 3, 7, 12);
        l.push(0, 5, ANY, 13);
        assert_eq!(l.take(1, 4, 7).map(|e| e.op), None);
        assert_eq!(l.take(1, 4, 8).map(|e| e.op), Some(11));
        assert_eq!(l.take(1, 3, ANY).map(|e| e.op), Some(10));
        assert_eq!(l.take(0, 5, 99).map(|e| e.op), Some(13));
        l.push(1, 3, 9, 14);
        assert_eq!(l.iter(1).map(|e| e.op).collect::<Vec<_>>(), vec![12, 14]);
        assert_eq!(l.take(1, 3, 7).map(|e| e.op), Some(12));
        assert_eq!(l.take(1, 3, 9).map(|e| e.op), Some(14));
        assert_eq!(l.len(), 0);
        assert_eq!(l.iter(1).count(), 0);
        l.push(1, 1, 1, 15);
        assert_eq!(l.iter(1).map(|e| e.op).collect::<Vec<_>>(), vec![15]);
    }
}
