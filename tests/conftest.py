"""Shared pytest fixtures: where the test-only C library and the shared
conformance data are, and how to load libdftest through ctypes."""

import ctypes
import os
import pathlib

import sys

import pytest

# Test modules import shared helpers as `import dfhelpers`.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent


def shared_testdata_dir():
    """The conformance corpora, or None when this checkout has none beside it."""
    env = os.environ.get("DF_SHARED_TESTDATA")
    path = pathlib.Path(env) if env else REPO_ROOT.parent / "shared" / "testdata"
    return path if path.is_dir() else None


@pytest.fixture(scope="session")
def testdata():
    path = shared_testdata_dir()
    if path is None:
        pytest.skip("shared conformance data (../shared/testdata) is not present in this checkout")
    return path


def _find_dftest():
    env = os.environ.get("DFTEST_LIB")
    if env:
        return pathlib.Path(env)
    for build in sorted(REPO_ROOT.glob("build*/tests/tools/libdftest.so")):
        return build
    return None


@pytest.fixture(scope="session")
def dftest():
    """libdftest loaded with ctypes.  Missing library is an error, not a skip:
    the test runner always builds it."""
    path = _find_dftest()
    if path is None or not path.exists():
        raise RuntimeError("libdftest.so not found: set DFTEST_LIB or build with meson (scripts/test does both)")
    return ctypes.CDLL(str(path))


def pytest_configure(config):
    config.addinivalue_line("markers", "dftest: uses libdftest (run by scripts/test under AddressSanitizer)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "dftest" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.dftest)
