"""Shared fixtures of the Python package's tests (run by `make python-test`
with PYTHONPATH=out/python and KV0_CLI=bin/kv0)."""

import os
import shutil
import subprocess
import sys

import pytest

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PYOUT = os.path.join(REPO_ROOT, "out", "python")


def in_ci():
    return os.environ.get("CI") == "true"


@pytest.fixture(autouse=True)
def wal_dir(tmp_path, monkeypatch):
    """Every test logs its WALs in a folder of its own (through os.environ,
    which kv0 passes to the engine at each open)."""
    d = tmp_path / "wal"
    monkeypatch.setenv("KV0_WAL_DIR", str(d))
    return d


@pytest.fixture(scope="session")
def cli():
    """The kv0 binary: $KV0_CLI, else built into a temporary folder."""
    path = os.environ.get("KV0_CLI")
    if path and os.path.exists(path):
        return path
    go = shutil.which("go")
    if go is None:
        pytest.fail("neither KV0_CLI nor go is available to get the kv0 CLI")
    out = os.path.join(REPO_ROOT, "bin", "kv0")
    subprocess.run([go, "build", "-o", out, "./native/cmd/kv0"], cwd=REPO_ROOT, check=True)
    return out


@pytest.fixture(scope="session")
def node():
    """node with tests/interop's lancedb install; fails under CI=true when
    missing, skips otherwise."""
    n = shutil.which("node")
    mods = os.path.join(REPO_ROOT, "tests", "interop", "node_modules", "@lancedb", "lancedb")
    if n is None or not os.path.isdir(mods):
        if in_ci():
            pytest.fail("CI=true but node or tests/interop/node_modules (npm ci) is missing")
        pytest.skip("node or tests/interop/node_modules missing (cd tests/interop && npm ci)")
    return n


def run_python(code, *args, env=None, check=True, timeout=120):
    """Run code in a fresh interpreter with the package on its path."""
    e = dict(os.environ)
    e["PYTHONPATH"] = PYOUT + os.pathsep + e.get("PYTHONPATH", "")
    if env:
        e.update(env)
    p = subprocess.run([sys.executable, "-c", code, *args], env=e, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"child failed ({p.returncode}):\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p
