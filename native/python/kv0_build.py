"""kv0's own PEP 517 build backend (standard library only).

The package is pure Python plus the prebuilt libkv0.so, so a wheel is a
zip of kv0/ and its metadata; no compiler and no package index are needed.
The wheel is tagged for the platform of the shared library: on Linux
manylinux_2_N_ARCH, where 2.N is the newest glibc symbol version it needs
(read from its ELF version needs), after checking that it links only
libraries every manylinux system has. The same inputs give the same wheel
bytes (fixed times in the zip).
"""

import base64
import hashlib
import io
import os
import struct
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
    lib = os.path.join(_HERE, "kv0", "libkv0.so")
    if os.path.exists(lib) and sysconfig.get_platform().startswith("linux-"):
        return f"py3-none-{manylinux_tag(lib)}"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"py3-none-{plat}"


class TagError(Exception):
    """The shared library cannot carry a manylinux tag."""


# The libraries a manylinux system provides (PEP 600 and the policies of
# PEP 599 it continues); a library linking anything else is not portable.
_MANYLINUX_LIBS = {"libc.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libpthread.so.0", "libresolv.so.2",
                   "libutil.so.1", "libnsl.so.1", "libgcc_s.so.1", "libstdc++.so.6", "ld-linux-x86-64.so.2",
                   "ld-linux-aarch64.so.1"}
_ELF_ARCH = {62: "x86_64", 183: "aarch64"}


def elf_needs(path):
    """The machine, the DT_NEEDED libraries and the symbol versions (from
    .gnu.version_r) of the 64-bit little-endian ELF shared object at path."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise TagError(f"{path}: not a 64-bit little-endian ELF file")
    machine = struct.unpack_from("<H", data, 18)[0]
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum = struct.unpack_from("<HH", data, 58)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]

    def cstr(sec, off):
        start = sections[sec][4] + off
        return data[start:data.index(b"\0", start)].decode()

    needed, versions = set(), set()
    for name, typ, _flags, _addr, off, size, link, info, _align, entsize in sections:
        if typ == 6:  # SHT_DYNAMIC: (tag, value) pairs
            for i in range(0, size, 16):
                tag, val = struct.unpack_from("<qQ", data, off + i)
                if tag == 1:  # DT_NEEDED
                    needed.add(cstr(link, val))
        elif typ == 0x6FFFFFFE:  # SHT_GNU_verneed
            at = off
            for _ in range(info):
                _ver, cnt, _file, aux, nxt = struct.unpack_from("<HHIII", data, at)
                a = at + aux
                for _ in range(cnt):
                    _hash, _fl, _other, vname, anext = struct.unpack_from("<IHHII", data, a)
                    versions.add(cstr(link, vname))
                    a += anext
                at += nxt
    return _ELF_ARCH.get(machine), needed, versions


def manylinux_tag(path):
    """manylinux_2_N_ARCH for the shared object at path (TagError if it
    links a library outside the manylinux set or needs versions other
    than glibc's)."""
    arch, needed, versions = elf_needs(path)
    if arch is None:
        raise TagError(f"{path}: an ELF machine manylinux has no tag for")
    extra = sorted(needed - _MANYLINUX_LIBS)
    if extra:
        raise TagError(f"{path} links {', '.join(extra)}, which manylinux systems need not have")
    newest = (2, 17)  # the oldest manylinux tag pip still knows
    for v in versions:
        if not v.startswith("GLIBC_"):
            if v.startswith("GLIBC_PRIVATE"):
                raise TagError(f"{path} needs {v}")
            continue  # GCC_*, CXXABI_*: libgcc_s and libstdc++ of any manylinux
        parts = tuple(int(x) for x in v[len("GLIBC_"):].split("."))
        newest = max(newest, (parts + (0,))[:2])
    return f"manylinux_{newest[0]}_{newest[1]}_{arch}"


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


# The time every entry of the wheel carries (zip cannot hold earlier ones).
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def _zip_entry(z, arcname, data, mode=0o644):
    info = zipfile.ZipInfo(arcname, _ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o100000 | mode) << 16
    z.writestr(info, data)


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
            _zip_entry(z, arc, data, 0o755 if arc.endswith(".so") else 0o644)
            records.append(_record_line(arc, data))
        for fname, text in (("METADATA", _metadata()), ("WHEEL", _wheel_file())):
            arc = f"{di}/{fname}"
            _zip_entry(z, arc, text)
            records.append(_record_line(arc, text.encode()))
        records.append(f"{di}/RECORD,,")
        _zip_entry(z, f"{di}/RECORD", "\n".join(records) + "\n")
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
