"""The release wheel (make dist-python: kv0-VERSION-py3-none-manylinux_2_N_ARCH.whl)
installs with pip into a fresh venv with no package index, and the smoke
test (test_smoke.py) passes with that venv's interpreter; its version is
kv0 version's, and its manylinux tag is the newest glibc version libkv0.so
needs as objdump -T lists them. KV0_WHEEL_DIR names the folder holding the
wheel (make python-test sets it to out/dist)."""

import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, in_ci

HERE = os.path.dirname(os.path.abspath(__file__))


def _wheel():
    d = os.path.abspath(os.environ.get("KV0_WHEEL_DIR") or os.path.join(REPO_ROOT, "out", "dist"))
    found = sorted(glob.glob(os.path.join(d, "kv0-*-py3-none-*.whl")))
    if len(found) != 1:
        why = f"want one kv0 wheel in {d} (make dist-python), found {len(found)}"
        if in_ci():
            pytest.fail(why)
        pytest.skip(why)
    return found[0]


def _run(args, **kw):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(PIP_NO_INDEX="1", PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1", **kw.pop("env", {}))
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=600, **kw)


def test_wheel_in_fresh_venv(tmp_path, cli):
    whl = _wheel()
    m = re.fullmatch(r"kv0-(.+)-py3-none-manylinux_(\d+)_(\d+)_(x86_64|aarch64)\.whl", os.path.basename(whl))
    assert m, f"{whl}: not kv0-VERSION-py3-none-manylinux_X_Y_ARCH.whl"
    venv = tmp_path / "venv"
    # The system's site-packages stay visible for pytest and numpy only:
    # kv0 itself must come from the venv (the smoke test checks).
    p = _run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)])
    if p.returncode != 0 and not in_ci() and "ensurepip" in p.stdout + p.stderr:
        pytest.skip("python3-venv is missing (apt-get install python3-venv)")
    assert p.returncode == 0, p.stdout + p.stderr
    py = str(venv / "bin" / "python")
    p = _run([py, "-m", "pip", "install", "--no-index", "--no-deps", whl], cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr

    p = _run([py, "-c", "import kv0, os; print(kv0.__version__); print(os.path.dirname(kv0.__file__))"],
             cwd=str(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    version, pkgdir = p.stdout.split("\n")[:2]
    assert pkgdir.startswith(str(venv)), pkgdir
    out = subprocess.run([cli, "version"], capture_output=True, text=True, check=True).stdout
    assert out.split()[1] == version == m.group(1), (out, version, whl)

    # The tag: the newest GLIBC_ version among libkv0.so's dynamic symbols.
    objdump = shutil.which("objdump")
    if objdump:
        syms = subprocess.run([objdump, "-T", os.path.join(pkgdir, "libkv0.so")], capture_output=True, text=True,
                              check=True).stdout
        newest = max((tuple(int(x) for x in v.split(".")) for v in re.findall(r"GLIBC_(\d+\.\d+)", syms)),
                     default=(2, 17))
        assert (int(m.group(2)), int(m.group(3))) == max(newest, (2, 17)), (whl, newest)
    elif in_ci():
        pytest.fail("objdump (binutils) is missing")

    p = _run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", os.path.join(HERE, "test_smoke.py")],
             cwd=str(tmp_path), env={"KV0_SMOKE_INSTALLED_IN": str(venv)})
    assert p.returncode == 0, p.stdout + p.stderr
    assert re.search(r"\b3 passed\b", p.stdout), p.stdout
