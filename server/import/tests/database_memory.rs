//! The memory a compilation database takes to read, measured by this test
//! binary's allocator: the bytes the reading thread holds at its peak,
//! against the size of the database.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;

use op2_import::compdb;

/// The system's allocator, counting on each thread the bytes it holds (what
/// it allocated less what it freed) and the most it held since
/// [`peak_from_here`].
struct Counting;

thread_local! {
    static HELD: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn add(bytes: isize) {
    // `try_with`: a thread's allocations after its locals are gone are not
    // counted.
    let _ = HELD.try_with(|held| {
        let now = held.get() + bytes;
        held.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: each call is passed to `System` as it is; only counters change.
// (The one `unsafe` of this test binary: an allocator is implemented so.)
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as isize);
        // SAFETY: as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(-(layout.size() as isize));
        // SAFETY: as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add(new_size as isize - layout.size() as isize);
        // SAFETY: as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Starts a measure on this thread: its peak from now is what it holds now.
fn peak_from_here() -> isize {
    let held = HELD.with(Cell::get);
    PEAK.with(|peak| peak.set(held));
    held
}

#[test]
fn a_database_of_many_arguments_is_read_in_memory_a_small_multiple_of_its_size() {
    // Entries of a thousand one-letter arguments (`"-c",`, five bytes each):
    // a JSON tree of it held about 64 bytes for each (a value and its
    // string), thirteen times the database. Read as a stream, one entry's
    // words at a time, what is held is the entries made and one entry's
    // words.
    let entry = |i: usize| {
        format!(
            r#"{{"directory": "/d", "file": "f{i}.cpp", "arguments": ["c++"{}]}}"#,
            r#", "-c""#.repeat(1_000)
        )
    };
    let text = format!("[{}]", (0..2_000).map(entry).collect::<Vec<_>>().join(","));
    let start = peak_from_here();
    let database = compdb::parse(Path::new("cc.json"), Path::new("/"), text.as_bytes()).unwrap();
    let peak = PEAK.with(Cell::get) - start;
    assert_eq!(database.entries.len(), 2_000);
    assert!(
        peak <= text.len() as isize / 2,
        "{peak} bytes held at the peak, reading a database of {} bytes",
        text.len()
    );
}
