#pragma once
// What a long command is doing now, for its progress line on a terminal (cli/common.hpp,
// LoadProgress): the pipeline names each phase as it starts ("finalizing the run", "writing
// tables: 12 (hierarchy)"); the line's ticker shows the latest once the files are read. A few
// calls per run: a mutex, no cost worth counting.
#include <string>

namespace chopper {

// The phase starting now; "" says nothing is to be shown.
void progress_phase(std::string what);
// The latest phase named.
std::string progress_phase_now();

}  // namespace chopper
