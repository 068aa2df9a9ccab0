#pragma once
// Allocator policy for big columnar tables and the temporaries of link and label.
//
// Freshly mapped pages are dear: the kernel zeroes each on its first touch, and on a virtual
// machine whose host backs guest memory lazily the host may fault too (on the bench machine a
// quarter of a read's CPU time is spent in the kernel, mostly in faulting in and clearing pages
// and in mapping the file). So chopper keeps the
// memory one stage frees for the next: blocks below 32 MiB come from the heap, and free memory at
// the heap's top is given back only above 64 MiB. Link then reuses what the reader freed (its
// window, the columns' first small buffers) and label what link freed. Larger blocks are mapped
// and unmapped as glibc does by default.
//
// The cost is free memory held between stages: peak RSS of a read with link and classify 0.336 ->
// 0.346 x the JSON on the bench trace. A multi-rank command gives it back once the model is built
// and labelled (release_free_memory) and then switches to return_freed_memory() for the
// analyses, so that their output tables' blocks go back to the system as before (`analyze` on 8
// ranks: peak RSS 0.436-0.452 x against 0.42-0.43 x). The fixed thresholds also stop glibc's own
// dynamic threshold, which would leave grown-and-freed column buffers in the heap as slack with
// nothing to reuse them.
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace chopper {

// Call once at program start: freed memory is kept for the next stage (see above).
inline void tune_allocator() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
}

// For the stages after the model is built (analyses and their output tables, whose blocks are
// not reused the same way): blocks of 256 KiB and more are mapped, and given back when freed.
inline void return_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  mallopt(M_TRIM_THRESHOLD, 128 << 10);
#endif
}

// Gives the heap's free memory back to the system (every arena, pages inside free blocks
// included).
inline void release_free_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace chopper
