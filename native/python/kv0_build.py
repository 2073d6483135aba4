"""kv0's own PEP 517 build backend (standard library only).

The package is pure Python plus the prebuilt libkv0.so, so a wheel is a
zip of kv0/ and its metadata; no compiler and no package index are needed.
The wheel is tagged for this platform because of the shared library.
"""

import base64
import hashlib
import io
import os
import sysconfig
import tarfile
import tomllib
import zipfile

_HERE = os.path.dirname(os.path.abspath(__file__))


def _project():
    with open(os.path.join(_HERE, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def _metadata():
    p = _project()
    return (f"Metadata-Version: 2.1\nName: {p['name']}\nVersion: {p['version']}\n"
            f"Summary: {p['description']}\nRequires-Python: {p['requires-python']}\n"
            f"License: {p['license']['text']}\n")


def _tag():
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"py3-none-{plat}"


def _package_files():
    root = os.path.join(_HERE, "kv0")
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in sorted(filenames):
            if name.endswith((".py", ".so")):
                full = os.path.join(dirpath, name)
                yield full, os.path.relpath(full, _HERE).replace(os.sep, "/")


def get_requires_for_build_wheel(config_settings=None):
    """No build requirements."""
    return []


def get_requires_for_build_sdist(config_settings=None):
    """No build requirements."""
    return []


def _dist_info():
    p = _project()
    return f"{p['name']}-{p['version']}.dist-info"


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    """Write the .dist-info folder."""
    d = os.path.join(metadata_directory, _dist_info())
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w") as f:
        f.write(_metadata())
    with open(os.path.join(d, "WHEEL"), "w") as f:
        f.write(_wheel_file())
    return _dist_info()


def _wheel_file():
    return f"Wheel-Version: 1.0\nGenerator: kv0_build\nRoot-Is-Purelib: false\nTag: {_tag()}\n"


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """Build kv0-VERSION-py3-none-PLATFORM.whl into wheel_directory."""
    p = _project()
    name = f"{p['name']}-{p['version']}-{_tag()}.whl"
    di = _dist_info()
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for full, arc in _package_files():
            with open(full, "rb") as f:
                data = f.read()
            z.writestr(arc, data)
            records.append(_record_line(arc, data))
        for fname, text in (("METADATA", _metadata()), ("WHEEL", _wheel_file())):
            arc = f"{di}/{fname}"
            z.writestr(arc, text)
            records.append(_record_line(arc, text.encode()))
        records.append(f"{di}/RECORD,,")
        z.writestr(f"{di}/RECORD", "\n".join(records) + "\n")
    return name


def build_sdist(sdist_directory, config_settings=None):
    """Build kv0-VERSION.tar.gz (the package as built, library included)."""
    p = _project()
    base = f"{p['name']}-{p['version']}"
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ("pyproject.toml", "kv0_build.py"):
            t.add(os.path.join(_HERE, rel), f"{base}/{rel}")
        for full, arc in _package_files():
            t.add(full, f"{base}/{arc}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return name
