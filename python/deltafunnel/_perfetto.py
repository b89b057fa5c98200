"""Locating the diagnostics programs shipped with the package.

``files("deltafunnel") / "perfetto" / "capture-workload"`` is the packaged
whole-process capture command; ``delta-funnel-perfetto`` (reports,
inspector, diff, capture-health, doctor) is installed on PATH next to the
interpreter.  Both are the same native program: invoked under the name
``capture-workload`` it runs that command.
"""

import os
import shutil
import subprocess
import sys
from importlib.resources import files


def capture_workload_path():
    """The packaged capture-workload program (a pathlib-like Traversable)."""
    return files("deltafunnel") / "perfetto" / "capture-workload"


def program_path():
    """Path of delta-funnel-perfetto: beside the interpreter, else on PATH, else the packaged copy."""
    here = os.path.join(os.path.dirname(sys.executable), "delta-funnel-perfetto")
    if os.access(here, os.X_OK):
        return here
    found = shutil.which("delta-funnel-perfetto")
    if found:
        return found
    return str(capture_workload_path())


def run_cli(argv=None):
    """Runs delta-funnel-perfetto with ``argv`` (default ``sys.argv[1:]``) and returns its exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    return subprocess.call(["delta-funnel-perfetto", *args], executable=program_path())
