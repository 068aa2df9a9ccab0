// The Kineto parser for x86-64-v2 CPUs: SSSE3 (blank runs by one shuffle per 16 bytes) and SSE4.1
// (numbers of up to 16 digits by one shuffle and three multiply-adds), with SSE4.2 and POPCNT.
// kineto_reader.cpp runs it only where the CPU has all of them.
#if defined(__x86_64__)
#define CHOPPER_KINETO_LEVEL 2
#define CHOPPER_KINETO_NS v2
#define CHOPPER_KINETO_TARGET "sse3,ssse3,sse4.1,sse4.2,popcnt"
#include "chopper/ingest/kineto/kineto_parser.inc"
#endif
