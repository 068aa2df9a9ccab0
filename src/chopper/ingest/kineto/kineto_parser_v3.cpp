// The Kineto parser for x86-64-v3 CPUs: what v2 has, and AVX and AVX2 (strings scanned, bytes
// compared and events reset 32 bytes at a time), BMI1 and BMI2. kineto_reader.cpp runs it only
// where the CPU has all of them and the OS saves the AVX registers.
#if defined(__x86_64__)
#define CHOPPER_KINETO_LEVEL 3
#define CHOPPER_KINETO_NS v3
#define CHOPPER_KINETO_TARGET "sse3,ssse3,sse4.1,sse4.2,popcnt,avx,avx2,bmi,bmi2"
#include "chopper/ingest/kineto/kineto_parser.inc"
#endif
