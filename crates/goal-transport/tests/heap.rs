//! The shared heap: allocation, offsets, returning memory, peers reading it.

mod common;

use common::*;
use goal_transport::shm::{ShmConfig, ShmNode};

#[test]
fn heap_alloc_free_offset_of() {
    let (a, _b) = pair(&small_cfg());
    let heap = a.heap();
    let reserve = heap.reserve();
    assert_eq!(reserve, 1 << 30);
    let mut rng = Rng(5);
    let mut live: Vec<(*mut u8, usize, u8)> = Vec::new();
    for i in 0..3000 {
        if live.is_empty() || rng.below(3) != 0 {
            let size = match rng.below(10) {
                0 => 0,
                1 => 64 << 10,
                2 => rng.below(1 << 20) + 1,
                _ => rng.below(2000) + 1,
            };
            let p = heap.alloc(size).expect("heap exhausted").as_ptr();
            assert_eq!(p as usize % 64, 0, "not 64-byte aligned");
            if size >= 64 << 10 {
                assert_eq!(p as usize % 4096, 0, "large block not page-aligned");
            }
            let off = heap.offset_of(p, size).expect("block outside the heap");
            assert!(off as usize + size <= reserve);
            let tag = i as u8;
            // SAFETY: `p` is a fresh block of `size` bytes.
            unsafe { std::ptr::write_bytes(p, tag, size) };
            live.push((p, size, tag));
        } else {
            let (p, size, tag) = live.swap_remove(rng.below(live.len()));
            // SAFETY: live blocks are still allocated; nobody else wrote them.
            let s = unsafe { std::slice::from_raw_parts(p, size) };
            assert!(
                s.iter().all(|&x| x == tag),
                "block overwritten: overlapping allocations"
            );
            assert!(heap.free(p));
            assert!(!heap.free(p), "double free accepted");
        }
    }
    for (p, size, tag) in live.drain(..) {
        // SAFETY: as above.
        let s = unsafe { std::slice::from_raw_parts(p, size) };
        assert!(s.iter().all(|&x| x == tag), "block overwritten");
        assert!(heap.free(p));
    }
    assert_eq!(heap.allocated_bytes(), 0);
    assert_eq!(heap.free_blocks(), 1, "free list not coalesced");

    // offset_of edges.
    let p = heap.alloc(100).unwrap().as_ptr();
    let base = p as usize - heap.offset_of(p, 0).unwrap() as usize;
    assert_eq!(heap.offset_of(base as *const u8, reserve), Some(0));
    assert_eq!(heap.offset_of(base as *const u8, reserve + 1), None);
    assert_eq!(heap.offset_of((base - 1) as *const u8, 1), None);
    let on_stack = 5u8;
    assert_eq!(heap.offset_of(&on_stack, 1), None);
    assert!(!heap.free(&on_stack as *const u8 as *mut u8));
    assert!(!heap.free(p.wrapping_add(64)), "interior pointer freed");
    assert!(heap.free(p));
    // Exhaustion is None, not a crash.
    assert!(heap.alloc(reserve + 1).is_none());
    let all = heap.alloc(reserve).expect("whole reserve");
    assert!(heap.alloc(1).is_none());
    assert!(heap.free(all.as_ptr()));
}

#[test]
fn heap_free_of_a_large_block_returns_its_memory() {
    let node = ShmNode::create(0, 1, &small_cfg()).unwrap();
    let heap = node.heap();
    let before = heap.resident_bytes().unwrap();
    let size = 8 << 20;
    let p = heap.alloc(size).unwrap().as_ptr();
    // SAFETY: fresh block of `size` bytes.
    unsafe { std::ptr::write_bytes(p, 0xAB, size) };
    let touched = heap.resident_bytes().unwrap();
    assert!(
        touched >= before + size as u64,
        "touching did not allocate? {before} -> {touched}"
    );
    assert!(heap.free(p));
    let after = heap.resident_bytes().unwrap();
    assert!(
        after <= before + 4096,
        "memory not returned: {before} -> {touched} -> {after}"
    );
    // The hole reads as zeros when reallocated.
    let q = heap.alloc(size).unwrap().as_ptr();
    // SAFETY: fresh block of `size` bytes.
    assert!(unsafe { std::slice::from_raw_parts(q, size) }
        .iter()
        .all(|&x| x == 0));
    heap.free(q);
}

#[test]
fn heap_default_reserve_is_64gib_and_sparse() {
    let node = ShmNode::create(
        0,
        1,
        &ShmConfig {
            heap_bytes: 64 << 30,
            ..small_cfg()
        },
    )
    .unwrap();
    let heap = node.heap();
    assert_eq!(heap.reserve(), 64 << 30);
    let p = heap.alloc(32 << 30).unwrap().as_ptr();
    // SAFETY: the block is 32 GiB; touch its first and last byte only.
    unsafe {
        p.write(1);
        p.add((32 << 30) - 1).write(2);
    }
    assert!(
        heap.resident_bytes().unwrap() < 1 << 20,
        "the reserve is not sparse"
    );
    assert!(heap.free(p));
}

#[test]
fn heap_peer_reads_my_heap() {
    let (a, b) = pair(&small_cfg());
    let heap = b.heap();
    let size = 3 << 20;
    let p = heap.alloc(size).unwrap().as_ptr();
    // SAFETY: fresh block of `size` bytes.
    let block = unsafe { std::slice::from_raw_parts_mut(p, size) };
    fill(42, block);
    let off = heap.offset_of(p, size).unwrap();
    let mut dst = vec![0u8; size];
    a.read_peer_heap(1, off, &mut dst).unwrap();
    check(42, &dst);
    // A sub-range, at an odd offset, read again through the cached mapping.
    let mut part = vec![0u8; 1001];
    a.read_peer_heap(1, off + 12345, &mut part).unwrap();
    assert_eq!(&part[..], &block[12345..12345 + 1001]);
    // Out of bounds is an error, not a crash.
    let reserve = heap.reserve() as u64;
    assert!(a.read_peer_heap(1, reserve - 10, &mut [0u8; 11]).is_err());
    assert!(a.read_peer_heap(1, u64::MAX - 3, &mut [0u8; 8]).is_err());
    // Reading my own heap works the same way.
    let mut own = vec![0u8; 64];
    b.read_peer_heap(1, off, &mut own).unwrap();
    assert_eq!(&own[..], &block[..64]);
    // The peer's later writes are visible (the mapping is shared, not a copy).
    block[0] = !block[0];
    a.read_peer_heap(1, off, &mut own[..1]).unwrap();
    assert_eq!(own[0], block[0]);
    heap.free(p);
}
