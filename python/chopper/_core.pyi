"""Type hints of chopper._core, the C++ extension under the package `chopper` (src/python/)."""
from typing import Any, List, Sequence, Tuple

import numpy as np

class ChopperError(Exception):
    """A chopper error: bad options, an unreadable rules file, manifest or database."""

class TraceError(ChopperError):
    """No file of the run could be read; the message names each file and the byte offset."""

class RunError(ChopperError):
    """The files were read but are not one run (link/validate.hpp): nothing analysed."""

class Table:
    """One result table in chopper's column-wise storage (owns the numpy views)."""
    @property
    def name(self) -> str: ...
    @property
    def rows(self) -> int: ...

class Result:
    """The tables of one analysis (or of a chopper.sqlite) and what analyze prints."""
    summary: str
    notes: str
    findings_json: str
    device: str
    warnings: List[str]
    def table_names(self) -> List[str]: ...
    def table(self, name: str) -> Table: ...
    def write(self, dir: str, csv: bool = True) -> None: ...
    def report(self, path: str, title: str) -> int: ...

def table_columns(table: Table) -> List[Tuple[str, str, np.ndarray]]: ...
def table_schema(table: Table) -> Tuple[str, List[Tuple[str, str, str, str, str]]]: ...
def analyze(paths: Sequence[str], options: dict[str, Any]) -> Result: ...
def open_database(path: str) -> Result: ...
def run_command(args: Sequence[str]) -> int: ...
