// The Kineto parser for any x86-64 CPU (SSE2 only), and for other architectures: built with the
// project's flags, no more. kineto_reader.cpp runs it where the CPU lacks what v2 needs, or when
// CHOPPER_ISA=baseline.
#define CHOPPER_KINETO_LEVEL 1
#define CHOPPER_KINETO_NS baseline
#include "chopper/ingest/kineto/kineto_parser.inc"
