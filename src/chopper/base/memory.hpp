#pragma once
// Allocator policy for big columnar tables and the temporaries of link and label.
//
// Why: freshly mapped pages are dear. The kernel zeroes each page on its first touch, and on a
// virtual machine whose host backs guest memory lazily the host may fault as well, so a read that
// maps new memory for every stage spends a large share of its CPU time in the kernel. chopper
// therefore keeps the memory one stage frees for the next: blocks below 32 MiB come from the heap,
// and free memory at the heap's top is given back only above 64 MiB. Link then reuses what the
// reader freed (its window, the columns' first small buffers) and label what link freed. Larger
// blocks are mapped and unmapped as glibc does by default. The fixed thresholds also turn off
// glibc's dynamic mmap threshold, which would otherwise leave grown-and-freed column buffers in
// the heap as slack that nothing reuses.
//
// The price is free memory held between stages (a few percent of peak RSS). A multi-rank command
// therefore gives it back once the model is built and labelled (release_free_memory) and then
// switches to return_freed_memory() for the analyses, whose output tables' blocks are not reused
// that way and should go back to the system when freed. Peak memory is measured by the
// benchmarks under bench/ (docs/architecture.md, "Performance budget").
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
