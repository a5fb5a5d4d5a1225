//! The process's allocator and how it gives memory back.
//!
//! Ingest allocates many short-lived maps and strings per event; under
//! glibc's allocator malloc/free were about a quarter of all instructions
//! (BENCHMARKS.md, "Measured choices"), so Rust allocations go to mimalloc.
//! [`tune`] sends SQLite's allocations there too: through glibc, each of the
//! threads that touch the database (writer, checkpointer, readers on
//! tokio's blocking pool) grew an arena of its own, and their fragments
//! stayed resident (40–47 MB of the whole-population personas peak). One
//! allocator that purges freed pages keeps the peak lower (BENCHMARKS.md,
//! "Measured choices").
//!
//! Left at its defaults, mimalloc holds far more than the live heap: under
//! heaptrack the whole-population personas phases peak at 54 MB of live
//! allocations (42 MB of it SQLite's), while resident memory reached
//! 172–192 MB, 75–106 MB of it mimalloc's arena. Two defaults cause it:
//!
//! - mimalloc advises the kernel to back its arena with transparent huge
//!   pages, so one live block keeps a whole 2 MiB page resident and a purge
//!   only returns whole huge pages;
//! - freed pages are purged (returned to the OS) a second after they
//!   empty, so one phase's pages are still held when the next one starts.
//!
//! [`tune`] turns both off at start-up: transparent huge pages for the
//! process (`PR_SET_THP_DISABLE`, which also covers kernels set to
//! `always`), and purges 100 ms after a page empties. An immediate purge
//! (0 ms) saved a few MB more but cost 5–10 % more CPU per single call in
//! `madvise` calls; 100 ms cost nothing measurable. Measured in
//! BENCHMARKS.md ("Measured choices"). An operator who
//! sets `MIMALLOC_ALLOW_THP` or `MIMALLOC_PURGE_DELAY` keeps their choice.

#![allow(
    unsafe_code,
    reason = "mimalloc's and SQLite's C configuration entry points, prctl(2), and the allocator SQLite calls back into"
)]

use std::ffi::{c_int, c_long, c_void};
use std::sync::Once;

use rusqlite::ffi;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc v3's `mi_option_t` (the index is
/// checked against the linked library by a test below).
const MI_OPTION_PURGE_DELAY: c_int = 15;
/// Milliseconds from a page emptying to its memory going back to the OS.
const PURGE_DELAY_MS: c_long = 100;

// Entry points of the mimalloc library the `mimalloc` crate links in.
unsafe extern "C" {
    fn mi_collect(force: bool);
    fn mi_option_set(option: c_int, value: c_long);
    fn mi_malloc(size: usize) -> *mut c_void;
    fn mi_realloc(p: *mut c_void, size: usize) -> *mut c_void;
    fn mi_free(p: *mut c_void);
    fn mi_usable_size(p: *const c_void) -> usize;
    #[cfg(test)]
    fn mi_is_in_heap_region(p: *const c_void) -> bool;
    #[cfg(test)]
    fn mi_option_get(option: c_int) -> c_long;
}

/// Sets the allocator up for a long-running server (see the module doc).
/// Call once, at the start of `serve`.
pub fn tune() {
    sqlite_through_mimalloc();
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        disable_transparent_huge_pages();
    }
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: plain integer arguments; mimalloc reads the option at each
        // purge, from any thread.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
}

#[cfg(target_os = "linux")]
fn disable_transparent_huge_pages() {
    // SAFETY: PR_SET_THP_DISABLE takes integer arguments only and affects
    // this process's future page faults.
    let done = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    if done != 0 {
        tracing::debug!("could not disable transparent huge pages for this process");
    }
}

#[cfg(not(target_os = "linux"))]
fn disable_transparent_huge_pages() {}

/// Points SQLite's memory allocator at mimalloc, and turns off SQLite's
/// memory statistics (nothing reads them; keeping them takes a global mutex
/// around every SQLite allocation, about 0.5 % of the writer thread's time
/// draining a backlog: BENCHMARKS.md, "Measured choices"). Must run before
/// SQLite is first used (it is, at the start of `serve`); later it cannot take
/// effect, and SQLite keeps glibc. Runs once per process.
fn sqlite_through_mimalloc() {
    // SQLite sizes are positive `int`s; a negative one never reaches here,
    // and would become a zero-size request rather than a huge one.
    unsafe extern "C" fn x_malloc(n: c_int) -> *mut c_void {
        // SAFETY: any size is valid for mi_malloc.
        unsafe { mi_malloc(usize::try_from(n).unwrap_or(0)) }
    }
    unsafe extern "C" fn x_free(p: *mut c_void) {
        // SAFETY: SQLite frees only what x_malloc/x_realloc returned.
        unsafe { mi_free(p) }
    }
    unsafe extern "C" fn x_realloc(p: *mut c_void, n: c_int) -> *mut c_void {
        // SAFETY: as above, `p` came from this allocator.
        unsafe { mi_realloc(p, usize::try_from(n).unwrap_or(0)) }
    }
    unsafe extern "C" fn x_size(p: *mut c_void) -> c_int {
        // SAFETY: as above.
        let size = unsafe { mi_usable_size(p) };
        c_int::try_from(size).unwrap_or(c_int::MAX)
    }
    unsafe extern "C" fn x_roundup(n: c_int) -> c_int {
        n.saturating_add(7) & !7
    }
    unsafe extern "C" fn x_init(_: *mut c_void) -> c_int {
        ffi::SQLITE_OK
    }
    unsafe extern "C" fn x_shutdown(_: *mut c_void) {}
    let methods = ffi::sqlite3_mem_methods {
        xMalloc: Some(x_malloc),
        xFree: Some(x_free),
        xRealloc: Some(x_realloc),
        xSize: Some(x_size),
        xRoundup: Some(x_roundup),
        xInit: Some(x_init),
        xShutdown: Some(x_shutdown),
        pAppData: std::ptr::null_mut(),
    };
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: SQLITE_CONFIG_MALLOC reads the methods struct and keeps a
        // copy of it before returning; the functions are plain statics.
        let rc = unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &raw const methods) };
        if rc != ffi::SQLITE_OK {
            tracing::debug!(rc, "SQLite was already in use; it keeps its own allocator");
        }
        // SAFETY: SQLITE_CONFIG_MEMSTATUS takes one int; like the call
        // above it only takes effect before SQLite is first used.
        let rc = unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_MEMSTATUS, 0 as c_int) };
        if rc != ffi::SQLITE_OK {
            tracing::debug!(
                rc,
                "SQLite was already in use; it keeps its memory statistics"
            );
        }
    });
}

/// Gives memory freed after a burst back to the operating system. mimalloc
/// keeps freed pages in the heap of the thread that used them and returns
/// them only when that thread allocates again; a worker that goes idle after
/// a burst (1,000 slow clients, say) would hold them for good. So each
/// runtime worker, when it parks for want of work, collects its heap, at
/// most every `COLLECT_EVERY` so a busy server pays nothing measurable.
pub fn collect_when_idle() {
    const COLLECT_EVERY: std::time::Duration = std::time::Duration::from_secs(2);
    thread_local! {
        static LAST: std::cell::Cell<Option<std::time::Instant>> = const { std::cell::Cell::new(None) };
    }
    LAST.with(|last| {
        let now = std::time::Instant::now();
        if last
            .get()
            .is_none_or(|t| now.duration_since(t) >= COLLECT_EVERY)
        {
            last.set(Some(now));
            // SAFETY: mi_collect takes no pointers and may be called from any
            // thread at any time.
            unsafe { mi_collect(true) };
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_allocates_from_mimalloc() {
        sqlite_through_mimalloc();
        // SAFETY: a plain allocation through SQLite's allocator, freed by it.
        let inside = unsafe {
            let p = ffi::sqlite3_malloc(100);
            assert!(!p.is_null());
            let inside = mi_is_in_heap_region(p);
            ffi::sqlite3_free(p);
            inside
        };
        assert!(inside, "SQLite's block is in mimalloc's heap");
        let db = rusqlite::Connection::open_in_memory().expect("open");
        db.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (randomblob(100000));")
            .expect("write");
        // Without memory statistics SQLite's allocations skip its global
        // mutex, and the count it would keep stays at zero.
        // SAFETY: reads a counter into locals.
        let (mut used, mut peak) = (0i64, 0i64);
        let rc = unsafe {
            ffi::sqlite3_status64(ffi::SQLITE_STATUS_MEMORY_USED, &mut used, &mut peak, 0)
        };
        assert_eq!(rc, ffi::SQLITE_OK);
        assert_eq!(used, 0, "SQLite keeps no memory statistics");
    }

    #[test]
    fn option_indices_match_the_linked_mimalloc() {
        // Defaults that identify the slots: `purge_delay` (15) is 1000 ms
        // and `os_tag` (18) is 100, and no neighbour has either value.
        const MI_OPTION_OS_TAG: c_int = 18;
        // SAFETY: reads options.
        let (tag, delay) = unsafe {
            (
                mi_option_get(MI_OPTION_OS_TAG),
                mi_option_get(MI_OPTION_PURGE_DELAY),
            )
        };
        assert_eq!(tag, 100);
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(delay, 1000);
        }
    }
}
