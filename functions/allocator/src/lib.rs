//! The global allocator of every binary (the Lambda functions through `lambda-glue`, the
//! local server): mimalloc. Not the library's and not the tests': a binary names it with
//! `#[global_allocator]`.
//!
//! Why not the `mimalloc` crate's own `MiMalloc`: it sends every allocation through
//! `mi_malloc_aligned`, whose fast path only serves blocks up to 1 KiB; a larger block (a
//! response body, hyper's read buffer, a request's future) took its generic path, about
//! 185 instructions each, eight times per `tools/list` (`scripts/bench-instructions`,
//! callgrind). Every mimalloc block is aligned to at least a word (its size classes are
//! multiples of 8 bytes), so a layout whose alignment is at most 8 (nearly every one: bytes,
//! strings, boxes of ordinary structs) takes the plain entry points; larger alignments
//! keep the aligned ones.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// mimalloc as the global allocator.
pub struct Allocator;

/// Whether mimalloc's plain entry points already give `layout` its alignment.
#[inline]
fn plain(layout: &Layout) -> bool {
    layout.align() <= WORD
}

/// The alignment of every mimalloc block.
const WORD: usize = 8;

// SAFETY: every block comes from mimalloc and goes back to it (`mi_free` takes blocks of
// both kinds of entry point); each entry point returns null on failure, as GlobalAlloc asks.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe {
            if plain(&layout) {
                mi::mi_malloc(layout.size()) as *mut u8
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe {
            if plain(&layout) {
                mi::mi_zalloc(layout.size()) as *mut u8
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        unsafe { mi::mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe {
            // The new block keeps the old alignment.
            if plain(&layout) {
                mi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8
            } else {
                mi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every layout comes back aligned as asked, through either entry point, zeroed when
    /// asked, and keeps its bytes when it grows and shrinks.
    #[test]
    fn every_block_is_aligned_as_its_layout_asks() {
        let allocator = Allocator;
        for align in [1usize, 2, 4, 8, 16, 32, 64, 128, 4096] {
            for size in [1usize, 7, 8, 15, 16, 24, 100, 1024, 1025, 5000, 70_000] {
                let layout = Layout::from_size_align(size, align).unwrap();
                let aligned = |p: *mut u8| !p.is_null() && (p as usize).is_multiple_of(align);
                unsafe {
                    let zeroed = allocator.alloc_zeroed(layout);
                    assert!(aligned(zeroed), "zeroed: size {size} align {align}");
                    assert!((0..size).all(|i| *zeroed.add(i) == 0));
                    allocator.dealloc(zeroed, layout);

                    let p = allocator.alloc(layout);
                    assert!(aligned(p), "size {size} align {align}");
                    p.write_bytes(0xA5, size);
                    let grown = allocator.realloc(p, layout, size * 3);
                    assert!(aligned(grown), "grown: size {size} align {align}");
                    assert!((0..size).all(|i| *grown.add(i) == 0xA5), "bytes kept");
                    let grown_layout = Layout::from_size_align(size * 3, align).unwrap();
                    let shrunk = allocator.realloc(grown, grown_layout, size / 2 + 1);
                    assert!(aligned(shrunk), "shrunk: size {size} align {align}");
                    assert!(
                        (0..size / 2 + 1).all(|i| *shrunk.add(i) == 0xA5),
                        "bytes kept"
                    );
                    let shrunk_layout = Layout::from_size_align(size / 2 + 1, align).unwrap();
                    allocator.dealloc(shrunk, shrunk_layout);
                }
            }
        }
    }
}
