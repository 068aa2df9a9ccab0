#pragma once
// Allocator policy for big columnar tables and the temporaries of link and label.
//
// Freshly mapped pages are dear: the kernel zeroes each on its first touch, and on a virtual
// machine whose host backs guest memory lazily the host may fault too (a quarter of the CPU time
// of a read on the bench machine went to page faults and clearing pages). So chopper keeps the
// memory one stage frees for the next: blocks below 32 MiB come from the heap, and free memory at
// the heap's top is given back only above 64 MiB. Link then reuses what the reader freed (its
// window, the columns' first small buffers) and label what link freed. Larger blocks are mapped
// and unmapped as glibc does by default.
//
// The cost is free memory kept between stages. A multi-rank command gives it back between stages
// with release_free_memory(), so one stage's leftovers never add to the next one's peak.
// (glibc's own default raises its mmap threshold dynamically up to 32 MiB too, but leaves grown
// and freed column buffers in the heap with a 128 KiB trim threshold that then rises with them.)
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
