"""Fixtures for the deltafunnel package tests: the installed package, the
`deltafunnel` command-line program and Delta tables made for the tests
(datagen tables written by the program, small tables written by the
deltalake package)."""

import datetime
import decimal
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent.parent


def _find_cli():
    env = os.environ.get("DELTAFUNNEL_CLI")
    if env:
        return env
    found = shutil.which("deltafunnel", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    if found:
        return found
    for candidate in sorted(REPO_ROOT.glob("build*/programs/deltafunnel")):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


@pytest.fixture(scope="session")
def cli():
    """Path of the deltafunnel program.  Missing is an error: `pip install .` installs it."""
    path = _find_cli()
    if path is None:
        raise RuntimeError("the deltafunnel program is not installed (pip install . puts it on PATH, "
                           "or set DELTAFUNNEL_CLI)")
    return path


def run_datagen(cli, output, rows, *extra):
    cmd = [cli, "datagen", "--output", str(output), "--rows", str(rows), *map(str, extra)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return output


@pytest.fixture(scope="session")
def mixed_table(cli, tmp_path_factory):
    """5,000 mixed rows over 2 partitions x 2 files."""
    return run_datagen(cli, tmp_path_factory.mktemp("mixed") / "t", 5000, "--partitions", 2, "--files", 2)


@pytest.fixture(scope="session")
def events_table(cli, tmp_path_factory):
    """3,000 event rows partitioned by a date column."""
    return run_datagen(cli, tmp_path_factory.mktemp("events") / "t", 3000, "--shape", "events", "--partitions", 3)


@pytest.fixture(scope="session")
def big_table(cli, tmp_path_factory):
    """10 million narrow rows in one file of 131,072-row row groups (generated once per run)."""
    return run_datagen(cli, tmp_path_factory.mktemp("big") / "t", 10_000_000, "--shape", "narrow", "--codec", "none")


@pytest.fixture(scope="session")
def demo_table(tmp_path_factory):
    """The reference README's kind of table, written by the deltalake package."""
    deltalake = pytest.importorskip("deltalake")
    pa = pytest.importorskip("pyarrow")
    table = pa.table({
        "id": pa.array([1, 2, 3, None], pa.int64()),
        "name": pa.array(["a", "b<&>\"'", None, "ünï"], pa.string()),
        "amount": pa.array([decimal.Decimal("1.50"), decimal.Decimal("-20.05"), None, decimal.Decimal("0.00")],
                           pa.decimal128(10, 2)),
        "d": pa.array([datetime.date(2024, 1, 2), None, datetime.date(1969, 12, 31), datetime.date(2000, 2, 29)],
                      pa.date32()),
        "ts": pa.array([datetime.datetime(2024, 1, 2, 3, 4, 5, 123456), None,
                        datetime.datetime(1969, 12, 31, 23, 59, 59, 1), datetime.datetime(2000, 2, 29)],
                       pa.timestamp("us", tz="UTC")),
        "flag": pa.array([True, False, None, True]),
        "f": pa.array([1.5, None, float("nan"), 1e20], pa.float64()),
        "bin": pa.array([b"\x00\xff", None, b"", b"abc"], pa.binary()),
    })
    path = tmp_path_factory.mktemp("demo") / "orders"
    deltalake.write_deltalake(str(path), table, mode="overwrite")
    return path


@pytest.fixture()
def session():
    import deltafunnel
    return deltafunnel.Session()
