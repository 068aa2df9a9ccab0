#!/usr/bin/env python3
"""CI requires every test to run: fails when ctest skipped a test that is not allowed to skip here.

usage: ci_skips.py CTEST_JUNIT.xml   (ctest --output-junit FILE)

Prints each skipped test with its reason and whether it is allowed; exit status 1 when any is not.
A skip is allowed only for a reason on the list below, each for a reason CI cannot change.
"""
import os
import shutil
import sys
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_TRACES = os.path.join(os.path.dirname(ROOT), "shared", "traces")


def allowed(name, output):
    """Why the skip of test `name` (its output `output`) is allowed here, or None."""
    # Opt-in: a payload above 2^31 bytes between two processes (4.5 GB of memory, minutes);
    # run with CHOPPER_COMM_BIG=1 ctest -R comm_mpi_big.
    if name == "comm_mpi_big":
        return "opt-in (CHOPPER_COMM_BIG=1)"
    # A build configured without MPI on purpose (the sanitizer build: Open MPI is not built with
    # the sanitizers): its MPI tests are registered as skipped, saying CHOPPER_MPI=OFF.
    if "CHOPPER_MPI=OFF" in output:
        return "MPI off in this build (CHOPPER_MPI=OFF)"
    # The real traces are public downloads beside the repository (../shared/traces), never in it:
    # tests that read them skip, saying so, where the directory is absent.
    if not os.path.isdir(SHARED_TRACES) and "shared" in output:
        return "../shared/traces is absent"
    # The CPU decides which x86-64 levels of the Kineto parser can run; CI cannot choose its CPU.
    if "KinetoIsaLevel." in name and "this CPU lacks" in output:
        return "CPU without the level"
    # report_browser needs Chromium (install-deps.sh --ci installs it): allowed only where no
    # Chromium is installed at all.
    if name == "report_browser" and not any(
            shutil.which(c) for c in ("chromium", "chromium-browser", "google-chrome")):
        return "no Chromium installed"
    return None


def skip_reason(output):
    """The line that says why: GoogleTest's message (the line after "...: Skipped"), else the
    script's "SKIP: ..." line, else the last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for i, line in enumerate(lines[:-1]):
        if line.endswith("Skipped"):
            return lines[i + 1]
    return next((line for line in lines if line.startswith("SKIP")),
                lines[-1] if lines else "(no output)")


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    bad = 0
    skipped = 0
    for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
        status = case.get("status", "")
        skip = case.find("skipped")
        if status != "skipped" and skip is None:
            continue
        skipped += 1
        name = case.get("name", "")
        output = "".join(e.text or "" for e in case.iter("system-out"))
        if skip is not None:
            output += " " + (skip.get("message") or "")
        why = allowed(name, output)
        reason = skip_reason(output)
        print(f"{'allowed' if why else 'NOT ALLOWED'}: {name} skipped: {reason[:200]}"
              + (f" [{why}]" if why else ""))
        bad += why is None
    print(f"ci_skips: {skipped} skipped, {bad} not allowed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
