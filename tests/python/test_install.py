"""`pip install ./out/python` works offline and installs a working package."""

import os
import subprocess
import sys

import pytest

from conftest import PYOUT, in_ci


def test_pip_install(tmp_path):
    p = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, text=True)
    if p.returncode != 0:
        if in_ci():
            pytest.fail("CI=true but pip is missing (apt-get install python3-pip)")
        pytest.skip("pip is missing")
    target = tmp_path / "site"
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--quiet",
                        "--target", str(target), PYOUT], capture_output=True, text=True,
                       env=dict(os.environ, PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert (target / "kv0" / "libkv0.so").is_file()
    assert list(target.glob("kv0-*.dist-info/RECORD"))
    code = ("import kv0, sys; assert kv0.__file__.startswith(sys.argv[1]), kv0.__file__; "
            "db = kv0.DB('memory://installed'); db.put(b'k', b'v'); assert db.get(b'k') == b'v'; print('ok')")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(target)
    p = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True, env=env,
                       cwd=str(tmp_path))
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stdout + p.stderr
