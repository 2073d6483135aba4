"""Packs kv0's release artifacts (make dist), with the standard library only.

    dist.py archives BUILD OUT   each folder BUILD/kv0-VERSION-OS-ARCH (kv0 or kv0.exe, README.md,
                                 LICENSE) as OUT/kv0-VERSION-OS-ARCH.tar.gz, or .zip for windows
    dist.py wheel PYOUT OUT      the wheel of the Python package built in PYOUT (make python), by its
                                 own build backend (PYOUT/kv0_build.py), into OUT
    dist.py sums OUT             OUT/SHA256SUMS of every other file in OUT (sha256sum -c reads it)

Archives hold their files under one folder of their own name, with fixed
times and owners, so the same inputs give the same bytes.
"""

import gzip
import hashlib
import io
import os
import sys
import tarfile
import zipfile

# 1980-01-01, the earliest time a zip entry can carry; the archives' times.
EPOCH = 315532800


def _files(folder):
    for name in sorted(os.listdir(folder)):
        yield name, os.path.join(folder, name)


def _mode(name):
    return 0o755 if name in ("kv0", "kv0.exe") else 0o644


def archives(build, out):
    for base, folder in _files(build):
        if not os.path.isdir(folder):
            continue
        if "-windows-" in base:
            path = os.path.join(out, base + ".zip")
            with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
                for name, full in _files(folder):
                    info = zipfile.ZipInfo(f"{base}/{name}", (1980, 1, 1, 0, 0, 0))
                    info.compress_type = zipfile.ZIP_DEFLATED
                    info.external_attr = (0o100000 | _mode(name)) << 16
                    with open(full, "rb") as f:
                        z.writestr(info, f.read())
        else:
            path = os.path.join(out, base + ".tar.gz")
            with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                                        compresslevel=9) as gz, \
                    tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as t:
                t.addfile(_tarinfo(base + "/", tarfile.DIRTYPE, 0, 0o755))
                for name, full in _files(folder):
                    with open(full, "rb") as f:
                        data = f.read()
                    t.addfile(_tarinfo(f"{base}/{name}", tarfile.REGTYPE, len(data), _mode(name)), io.BytesIO(data))
        print(f"dist: {path}")


def _tarinfo(name, typ, size, mode):
    info = tarfile.TarInfo(name)
    info.type, info.size, info.mode, info.mtime = typ, size, mode, EPOCH
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def wheel(pyout, out):
    sys.path.insert(0, os.path.abspath(pyout))
    import kv0_build  # the package's own build backend, as make python wrote it

    name = kv0_build.build_wheel(os.path.abspath(out))
    print(f"dist: {os.path.join(out, name)}")


def sums(out):
    lines = []
    for name, full in _files(out):
        if name == "SHA256SUMS" or not os.path.isfile(full):
            continue
        h = hashlib.sha256()
        with open(full, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        lines.append(f"{h.hexdigest()}  {name}\n")
    with open(os.path.join(out, "SHA256SUMS"), "w") as f:
        f.writelines(lines)
    print(f"dist: {os.path.join(out, 'SHA256SUMS')} ({len(lines)} files)")


def main(argv):
    cmds = {"archives": (archives, 2), "wheel": (wheel, 2), "sums": (sums, 1)}
    if len(argv) < 2 or argv[1] not in cmds or len(argv) - 2 != cmds[argv[1]][1]:
        sys.stderr.write(__doc__)
        return 2
    cmds[argv[1]][0](*argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
