//! Large blocks on transparent huge pages, for the simulator's and the
//! compiled engine's big arrays.
//!
//! At size, `op2 simulate` touches a few places per delivery in arrays
//! far larger than the caches (the edges, the devices' ready pins and
//! clocks, the elements' progress and rows) in an order no prefetcher
//! follows, and with 4 KiB pages nearly every such touch misses the TLB as
//! well as the caches. Where Linux hands out huge pages only to memory
//! that asks for them (`/sys/kernel/mm/transparent_hugepage/enabled` set
//! to `madvise`, the default of many distributions), [`HugePages`] asks:
//! it is the system allocator, except that on Linux every block of at
//! least [`THRESHOLD`] bytes is a mapping of its own, advised
//! `MADV_HUGEPAGE` before anything is written to it, moved to a new
//! mapping when it grows, and unmapped when freed. (The C library would
//! put many such blocks in its heap, among pages already faulted in small,
//! where advice comes too late; [`collapse_heap`] moves the heap itself
//! once a simulation has built its state.) docs/benchmarks.md measures
//! the gain ("huge pages and a send's edges ahead"). Elsewhere, or with
//! huge pages set to `never`, it changes nothing but where the memory
//! comes from; it never changes a result.

use std::alloc::{GlobalAlloc, Layout, System};

/// Blocks of at least this many bytes (one huge page on x86-64 and most
/// arm64 kernels) are mappings of their own.
pub const THRESHOLD: usize = 2 << 20;

/// The size of a huge page on x86-64 and most arm64 kernels; a mapping of
/// ours starts on one.
const HUGE_PAGE: usize = 2 << 20;

/// The system allocator, with huge pages for large blocks. The `op2`
/// binary installs it with `#[global_allocator]`.
#[derive(Debug, Default, Clone, Copy)]
pub struct HugePages;

// SAFETY: a block is a mapping of its own exactly when `mapped::owns` holds
// for its layout, which the caller passes unchanged to `dealloc` and
// `realloc`, so every block goes back to where it came from; the rest is
// `System`'s, called with the caller's contract.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if mapped::owns(layout) {
            mapped::map(layout.size())
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if mapped::owns(layout) {
            // A fresh anonymous mapping reads as zeros.
            mapped::map(layout.size())
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        if mapped::owns(layout) {
            // SAFETY: `alloc` mapped it, with this size.
            unsafe { mapped::unmap(block, layout.size()) }
        } else {
            // SAFETY: the caller's contract, passed on.
            unsafe { System.dealloc(block, layout) }
        }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees that `size`, rounded up to the
        // alignment, does not overflow `isize`.
        let grown = unsafe { Layout::from_size_align_unchecked(size, layout.align()) };
        match (mapped::owns(layout), mapped::owns(grown)) {
            // SAFETY: `alloc` mapped it, with the old size.
            (true, true) => unsafe { mapped::remap(block, layout.size(), size) },
            // SAFETY: the caller's contract, passed on.
            (false, false) => unsafe { System.realloc(block, layout, size) },
            // Across the threshold: a new block, the contents copied, the
            // old one freed (the trait's own way).
            _ => {
                // SAFETY: `grown` is a valid layout of non-zero size.
                let moved = unsafe { self.alloc(grown) };
                if !moved.is_null() {
                    // SAFETY: both blocks hold at least the smaller size,
                    // and a new block does not overlap a live one.
                    unsafe {
                        std::ptr::copy_nonoverlapping(block, moved, layout.size().min(size));
                        self.dealloc(block, layout);
                    }
                }
                moved
            }
        }
    }
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod mapped {
    use std::alloc::Layout;
    use std::ptr::null_mut;

    use super::{HUGE_PAGE, THRESHOLD};

    /// The kernel's page size.
    fn page() -> usize {
        // SAFETY: `sysconf` reads a value the kernel gave the process.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(page).unwrap_or(4096).max(4096)
    }

    /// Whether a block of `layout` is a mapping of its own: large, and
    /// aligned no more than a page is.
    pub fn owns(layout: Layout) -> bool {
        layout.size() >= THRESHOLD && layout.align() <= page()
    }

    /// The length of the mapping of a block of `size` bytes.
    fn length(size: usize) -> usize {
        // A block's size is below `isize::MAX`: rounding cannot overflow.
        size.next_multiple_of(page())
    }

    /// Asks for huge pages over a mapping; a refusal (a kernel without
    /// them) leaves it as it is.
    fn advise(block: *mut u8, length: usize) {
        // SAFETY: `[block, block + length)` is a whole mapping of ours;
        // the advice changes how its pages are backed, never their
        // contents.
        unsafe {
            libc::madvise(block.cast(), length, libc::MADV_HUGEPAGE);
        }
    }

    /// A new mapping for a block of `size` bytes, zeroed, starting on a
    /// huge page, or null. The kernel aligns only some lengths by itself
    /// (a block of 2 MiB and 4 KiB got no huge page at all): a huge page
    /// more is mapped, and what lies before the first boundary and after
    /// the block is unmapped again.
    pub fn map(size: usize) -> *mut u8 {
        let length = length(size);
        let Some(reserved) = length.checked_add(HUGE_PAGE) else {
            return null_mut();
        };
        // SAFETY: an anonymous private mapping at an address the kernel
        // chooses touches no existing memory.
        let start = unsafe {
            libc::mmap(
                null_mut(),
                reserved,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if start == libc::MAP_FAILED {
            return null_mut();
        }
        let start = start as usize;
        // Inside the reservation: at most a huge page less a page before,
        // and the block's whole length after.
        let block = start.next_multiple_of(HUGE_PAGE);
        let (before, after) = (block - start, start + reserved - (block + length));
        // SAFETY: both ranges are whole pages of the reservation just made,
        // outside the block kept.
        unsafe {
            if before > 0 {
                libc::munmap(start as *mut libc::c_void, before);
            }
            if after > 0 {
                libc::munmap((block + length) as *mut libc::c_void, after);
            }
        }
        let block = block as *mut u8;
        advise(block, length);
        block
    }

    /// The heap's mappings, huge-page aligned inward, advised and
    /// collapsed.
    pub fn collapse_heap() {
        const MADV_COLLAPSE: libc::c_int = 25;
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
            return;
        };
        for line in maps.lines().filter(|l| l.ends_with("[heap]")) {
            let Some((from, to)) = line
                .split_whitespace()
                .next()
                .and_then(|r| r.split_once('-'))
            else {
                continue;
            };
            let (Ok(from), Ok(to)) = (
                usize::from_str_radix(from, 16),
                usize::from_str_radix(to, 16),
            ) else {
                continue;
            };
            let start = from.next_multiple_of(HUGE_PAGE);
            let end = to / HUGE_PAGE * HUGE_PAGE;
            if end > start {
                // SAFETY: whole pages of the heap's mapping; both calls
                // change how its pages are backed, never their contents.
                unsafe {
                    libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
                    libc::madvise(start as *mut libc::c_void, end - start, MADV_COLLAPSE);
                }
            }
        }
    }

    /// Unmaps a block [`map`] made for `size` bytes.
    ///
    /// # Safety
    ///
    /// `block` came from [`map`] or [`remap`] for `size` bytes and is not
    /// used again.
    pub unsafe fn unmap(block: *mut u8, size: usize) {
        // SAFETY: the caller's contract: the whole mapping, ours.
        unsafe {
            libc::munmap(block.cast(), length(size));
        }
    }

    /// Grows or shrinks a block [`map`] made for `size` bytes to `to`
    /// bytes, or returns null and leaves it as it was. A block that grows
    /// moves to a new mapping, its contents copied: `mremap` would move its
    /// small pages as they are, and a vector grown by doubling would keep
    /// most of its pages small.
    ///
    /// # Safety
    ///
    /// As for [`unmap`]; on success the old address is not used again.
    pub unsafe fn remap(block: *mut u8, size: usize, to: usize) -> *mut u8 {
        if length(to) <= length(size) {
            // Shrinking in place: the tail's pages go back.
            // SAFETY: the caller's contract: the whole mapping, ours, and
            // its tail past the new length is not used again.
            unsafe {
                let tail = length(size) - length(to);
                if tail > 0 {
                    libc::munmap(block.add(length(to)).cast(), tail);
                }
            }
            return block;
        }
        let moved = map(to);
        if !moved.is_null() {
            // SAFETY: both mappings hold at least `size` bytes and do not
            // overlap; the old one is ours and not used again.
            unsafe {
                std::ptr::copy_nonoverlapping(block, moved, size);
                unmap(block, size);
            }
        }
        moved
    }
}

/// Elsewhere every block is the system allocator's.
#[cfg(not(target_os = "linux"))]
#[allow(unsafe_code)]
mod mapped {
    use std::alloc::Layout;

    pub fn owns(_: Layout) -> bool {
        false
    }

    pub fn map(_: usize) -> *mut u8 {
        std::ptr::null_mut()
    }

    pub unsafe fn unmap(_: *mut u8, _: usize) {}

    pub unsafe fn remap(_: *mut u8, _: usize, _: usize) -> *mut u8 {
        std::ptr::null_mut()
    }
}

/// Moves the C library's heap onto huge pages now, where blocks below
/// [`THRESHOLD`] live, already faulted in small pages: for a simulation or
/// a run that has built its arrays and is about to walk them for a long
/// time. Does nothing where the kernel cannot (`MADV_COLLAPSE`, Linux 6.1
/// on).
///
/// At most once per process (the first simulation's state, in `op2
/// simulate` the only one): a process that simulates many small graphs,
/// the fuzzer or the tests, pays for it once. The collapse backs the whole
/// of each huge page it makes, free parts of the heap included; after a
/// simulation has built its state the heap is nearly all that state
/// (docs/benchmarks.md: 1.94 GB at 1M cells, less than before).
pub fn collapse_heap() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    #[cfg(target_os = "linux")]
    ONCE.call_once(mapped::collapse_heap);
    #[cfg(not(target_os = "linux"))]
    ONCE.call_once(|| {});
}

#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use super::*;

    fn layout(size: usize) -> Layout {
        Layout::from_size_align(size, 8).unwrap()
    }

    /// Allocates `size` bytes, zeroed, checks them, fills them with
    /// `byte` and returns the block.
    fn filled(size: usize, byte: u8) -> *mut u8 {
        // SAFETY: a non-zero layout; the block is read and written inside
        // its size.
        unsafe {
            let block = HugePages.alloc_zeroed(layout(size));
            assert!(!block.is_null());
            assert!(
                std::slice::from_raw_parts(block, size)
                    .iter()
                    .all(|&b| b == 0)
            );
            block.write_bytes(byte, size);
            block
        }
    }

    #[test]
    fn blocks_keep_their_contents_when_grown_and_shrunk_across_the_threshold() {
        // Small to large to larger to small again: each move keeps what the
        // smaller of the two sizes holds.
        let sizes = [
            THRESHOLD / 2,
            THRESHOLD * 2,
            THRESHOLD * 5,
            THRESHOLD + 1,
            100,
        ];
        let mut block = filled(sizes[0], 7);
        for pair in sizes.windows(2) {
            let (from, to) = (pair[0], pair[1]);
            // SAFETY: `block` holds `from` bytes of the layout it was
            // allocated or last grown with; the new one holds `to`.
            unsafe {
                block = HugePages.realloc(block, layout(from), to);
                assert!(!block.is_null());
                let kept = std::slice::from_raw_parts(block, from.min(to));
                assert!(kept.iter().all(|&b| b == 7), "{from} → {to}");
                block.write_bytes(7, to);
            }
        }
        // SAFETY: the last size's layout.
        unsafe { HugePages.dealloc(block, layout(100)) };
    }

    /// The kernel's flags of the mapping that holds `address`, from
    /// `/proc/self/smaps`.
    #[cfg(target_os = "linux")]
    fn mapping_flags(address: usize) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let range = line
                .split_whitespace()
                .next()
                .and_then(|r| r.split_once('-'));
            if let Some((from, to)) = range
                && let (Ok(from), Ok(to)) = (
                    usize::from_str_radix(from, 16),
                    usize::from_str_radix(to, 16),
                )
            {
                inside = (from..to).contains(&address);
            } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
                return Some(flags.to_owned());
            }
        }
        None
    }

    /// The mapping that holds `address`, from `/proc/self/maps`.
    #[cfg(target_os = "linux")]
    fn mapping_of(address: usize) -> Option<(usize, usize)> {
        let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
        maps.lines().find_map(|line| {
            let (from, to) = line.split_whitespace().next()?.split_once('-')?;
            let (from, to) = (
                usize::from_str_radix(from, 16).ok()?,
                usize::from_str_radix(to, 16).ok()?,
            );
            (from..to).contains(&address).then_some((from, to))
        })
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn large_blocks_start_on_a_huge_page_and_give_back_what_they_shrink_by() {
        // Lengths the kernel does not align by itself.
        for size in [THRESHOLD + 4096, 3 << 20, 5 * THRESHOLD + 12_345] {
            let block = filled(size, 3);
            assert_eq!(block as usize % HUGE_PAGE, 0, "{size} bytes");
            // SAFETY: the layout it was allocated with.
            unsafe { HugePages.dealloc(block, layout(size)) };
        }
        // Shrunk from 16 MiB to 5 MiB: the mapping ends with the block, and
        // keeps its bytes.
        let (large, small) = (8 * THRESHOLD, 5 << 20);
        let block = filled(large, 9);
        // SAFETY: a block of `large` bytes, shrunk, then freed with the
        // layout of its new size.
        unsafe {
            let shrunk = HugePages.realloc(block, layout(large), small);
            assert_eq!(shrunk, block, "shrunk in place");
            let (_, end) = mapping_of(shrunk as usize).expect("its mapping");
            assert_eq!(end, shrunk as usize + small, "the tail is unmapped");
            assert!(
                std::slice::from_raw_parts(shrunk, small)
                    .iter()
                    .all(|&b| b == 9)
            );
            HugePages.dealloc(shrunk, layout(small));
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_kernel_records_the_advice_on_a_large_block_and_not_on_a_small_one() {
        if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
            #[allow(clippy::print_stderr)]
            {
                eprintln!(
                    "SKIPPED: this kernel has no transparent huge pages, so it refuses the advice"
                );
            }
            return;
        }
        let advised = |size: usize| {
            let block = filled(size, 1);
            let flags = mapping_flags(block as usize);
            // SAFETY: the layout it was allocated with.
            unsafe { HugePages.dealloc(block, layout(size)) };
            // `hg`: the mapping was advised `MADV_HUGEPAGE`.
            let flags = flags.expect("the block's mapping in /proc/self/smaps");
            flags.split_whitespace().any(|f| f == "hg")
        };
        assert!(advised(THRESHOLD * 3));
        assert!(!advised(1000));
    }
}
