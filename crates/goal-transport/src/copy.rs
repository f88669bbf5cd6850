//! The copies that move a message's bytes: into and out of the eager rings,
//! through the stream, out of a shared heap, between a schedule's buffers.
//!
//! Two things make them goal's own rather than plain `memcpy`:
//!
//! * a message of a few bytes is copied inline, without a call (the common
//!   case of latency-bound collectives, where the call costs more than the
//!   copy);
//! * a copy whose destination lies 1 to 15 bytes past its source, counted
//!   modulo a 4 KiB page, goes by a loop of 16-byte vector moves instead of
//!   glibc's `memcpy`. Past about 2 KiB glibc copies with `rep movsb`, and on
//!   the AMD EPYC (Zen 4) these notes were measured on that instruction is
//!   16 times slower at those distances: 64 KiB took 18.7 us instead of 1.1
//!   (glibc 2.36, every source offset, distances 1 to 15 bytes; the vector
//!   loop took 2.0 us). Where another core had read the destination (a
//!   ring's lines) both pay for taking the lines back, and `rep movsb` still
//!   more: 27 against 18 us, or 63 against 38 while the host kept the two
//!   vCPUs far apart. Which distance a copy meets depends on the
//!   application's buffer and on where a ring's records or a stream's chunks
//!   fall (records move by their 40-byte envelope): a 2-rank ping-pong whose
//!   buffers start 8 bytes past a page took 100 us at 256 KiB and 440 at
//!   1 MiB, against 15 and 55 with this loop
//!   (`docs/measurements/page-aliased-copies-2026-12-03/`). Newer glibc
//!   avoids `rep movsb` at short distances on some CPUs only, and a library
//!   cannot set glibc's tunables after its process started.

/// Copies from this many bytes are checked for a page-aliased distance
/// (below it glibc copies with vector moves, not `rep movsb`).
const ALIAS_MIN: usize = 1024;

/// Distances (destination less source, modulo a page) that `rep movsb`
/// copies slowly: 1 to 15 bytes, measured over every source offset and
/// distance in steps of 8 bytes (and of 1 byte near the page's start).
/// Elsewhere `memcpy` stays: as fast as the loop or faster.
const ALIAS_MAX: usize = 15;

/// Whether `dst` lies 1 to [`ALIAS_MAX`] bytes past `src` modulo 4 KiB.
#[inline(always)]
fn page_aliased(src: *const u8, dst: *const u8) -> bool {
    let d = (dst as usize).wrapping_sub(src as usize) & 4095;
    d != 0 && d <= ALIAS_MAX
}

/// Copies `n` bytes from `src` to `dst`, like `std::ptr::copy_nonoverlapping`,
/// but without a call to `memcpy` for up to 16 bytes (callgrind: 12
/// instructions per copy of 8 bytes saved, three copies per message), and
/// without `rep movsb` where its destination is page-aliased to its source
/// (see the module's notes).
///
/// # Safety
/// As `std::ptr::copy_nonoverlapping`: `src` valid for reads and `dst` for
/// writes of `n` bytes, not overlapping.
#[inline(always)]
pub unsafe fn copy_bytes(src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY (all branches): every access lies within the first `n` bytes
    // of `src` and `dst` (caller); unaligned reads and writes are allowed.
    unsafe {
        if n > 16 {
            if n >= ALIAS_MIN && page_aliased(src, dst) {
                copy_aliased(src, dst, n);
            } else {
                std::ptr::copy_nonoverlapping(src, dst, n);
            }
        } else if n >= 8 {
            // Two 8-byte words, overlapping when n < 16.
            let (a, b) = ((src as *const u64).read_unaligned(), (src.add(n - 8) as *const u64).read_unaligned());
            (dst as *mut u64).write_unaligned(a);
            (dst.add(n - 8) as *mut u64).write_unaligned(b);
        } else if n >= 4 {
            let (a, b) = ((src as *const u32).read_unaligned(), (src.add(n - 4) as *const u32).read_unaligned());
            (dst as *mut u32).write_unaligned(a);
            (dst.add(n - 4) as *mut u32).write_unaligned(b);
        } else {
            for i in 0..n {
                *dst.add(i) = *src.add(i);
            }
        }
    }
}

/// As `std::ptr::copy` (the ranges may overlap): [`copy_bytes`] where they
/// do not, `memmove` where they do.
///
/// # Safety
/// As `std::ptr::copy`: `src` valid for reads and `dst` for writes of `n`
/// bytes.
#[inline]
pub unsafe fn move_bytes(src: *const u8, dst: *mut u8, n: usize) {
    let (s, d) = (src as usize, dst as usize);
    // SAFETY: the caller's guarantees; `copy_bytes` only where the two
    // ranges are disjoint.
    unsafe {
        if s.wrapping_sub(d) >= n && d.wrapping_sub(s) >= n {
            copy_bytes(src, dst, n);
        } else {
            std::ptr::copy(src, dst, n);
        }
    }
}

/// A forward copy in 64-byte steps of 16-byte vector moves, loads
/// unaligned and stores aligned (all four loads before the stores, a shape
/// the compiler leaves as it is rather than turning it back into a `memcpy`
/// call): the bytes up to the destination's next 64-byte boundary, and the
/// last partial step, by `memcpy`, which copies fewer than 64 bytes with
/// vector moves too. Aligned stores fill each destination line whole: where
/// another core had read the destination (a ring's lines, read by their
/// receiver a lap before) unaligned ones split every line between two
/// stores, and a 64 KiB copy took 18 us against `memcpy`'s 9.5 at distances
/// `memcpy` copies well; aligned, 9.4 against 9.3.
///
/// # Safety
/// As [`copy_bytes`].
#[cold]
#[inline(never)]
unsafe fn copy_aliased(src: *const u8, dst: *mut u8, n: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_store_si128};
        let mut i = dst.align_offset(64).min(n);
        // SAFETY: the first `i <= n` bytes of both (caller).
        unsafe { std::ptr::copy_nonoverlapping(src, dst, i) };
        while i + 64 <= n {
            // SAFETY: bytes `i..i + 64` lie within the first `n` of both
            // (the loop's bound); `dst + i` is 64-byte aligned (`i` started
            // at the distance to the boundary and grows by 64), as the
            // aligned stores need; SSE2 is part of x86_64, and the
            // unaligned loads accept any address.
            unsafe {
                let s = src.add(i) as *const __m128i;
                let d = dst.add(i) as *mut __m128i;
                let (a, b, c, e) = (_mm_loadu_si128(s), _mm_loadu_si128(s.add(1)), _mm_loadu_si128(s.add(2)), _mm_loadu_si128(s.add(3)));
                _mm_store_si128(d, a);
                _mm_store_si128(d.add(1), b);
                _mm_store_si128(d.add(2), c);
                _mm_store_si128(d.add(3), e);
            }
            i += 64;
        }
        // SAFETY: the remaining `n - i` bytes, within both (caller).
        unsafe { std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), n - i) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's guarantees.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, n)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every distance around a page's start, sizes on and off the 64-byte
    /// step, both copies: the bytes arrive, and none around them change.
    #[test]
    fn copies_at_every_short_page_distance_are_exact() {
        let src: Vec<u8> = (0..80_000u32).map(|i| (i * 7 + 3) as u8).collect();
        for n in [17, 1023, 1024, 1025, 4095, 4160, 65536, 65536 + 7] {
            for so in [0usize, 8, 40, 4093] {
                for dist in (0..80).chain(4090..4096) {
                    let mut dst = vec![0xeeu8; n + 8192 + 16];
                    let base = dst.as_ptr() as usize;
                    // The destination's offset giving `dist` past the source modulo 4 KiB.
                    let at = (src.as_ptr() as usize + so + dist).wrapping_sub(base) & 4095;
                    // SAFETY: `so + n` and `at + n` lie within src and dst.
                    unsafe { copy_bytes(src.as_ptr().add(so), dst.as_mut_ptr().add(at), n) };
                    assert_eq!(&dst[at..at + n], &src[so..so + n], "n {n}, source offset {so}, distance {dist}");
                    assert!(dst[..at].iter().chain(&dst[at + n..]).all(|&b| b == 0xee), "n {n}, distance {dist}: bytes outside were written");
                    if n == 65536 {
                        // And the same through the overlapping form.
                        let mut again = vec![0u8; n + 8192];
                        // SAFETY: as above, disjoint buffers.
                        unsafe { move_bytes(src.as_ptr().add(so), again.as_mut_ptr().add(at), n) };
                        assert_eq!(&again[at..at + n], &src[so..so + n]);
                    }
                }
            }
        }
    }

    #[test]
    fn an_overlapping_move_copies_as_memmove() {
        for shift in [1usize, 8, 40, 63, 64, 4097] {
            let orig: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
            let n = 12_000;
            let mut fwd = orig.clone();
            // SAFETY: both ranges lie within `fwd`.
            unsafe { move_bytes(fwd.as_ptr(), fwd.as_mut_ptr().add(shift), n) };
            assert_eq!(&fwd[shift..shift + n], &orig[..n], "forward by {shift}");
            let mut back = orig.clone();
            // SAFETY: as above.
            unsafe { move_bytes(back.as_ptr().add(shift), back.as_mut_ptr(), n) };
            assert_eq!(&back[..n], &orig[shift..shift + n], "backward by {shift}");
        }
    }

    #[test]
    fn only_short_forward_page_distances_count_as_aliased() {
        let p = 0x1000 as *const u8;
        assert!(!page_aliased(p, p));
        assert!(page_aliased(p, p.wrapping_add(8)));
        assert!(page_aliased(p, p.wrapping_add(4096 + 15)));
        assert!(!page_aliased(p, p.wrapping_add(16)));
        assert!(!page_aliased(p.wrapping_add(8), p));
    }
}
