#!/usr/bin/env python3
"""Code size per Go package of a Go wasm binary: the code section's function
bodies, named by the "name" custom section, grouped by package path.
Usage: wasmsize.py kv0.wasm [N] [PACKAGE]  (the N largest packages, default 30;
with PACKAGE, as printed in the first listing, the N largest types of that
package instead: its functions grouped by receiver, generic shape or name)."""
import collections, re, sys

def leb(b, i):
    r = s = 0
    while True:
        x = b[i]; i += 1
        r |= (x & 0x7f) << s; s += 7
        if x < 0x80:
            return r, i

def main():
    b = open(sys.argv[1], 'rb').read()
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    only = sys.argv[3] if len(sys.argv) > 3 else None
    i, nimports, bodies, names, sections = 8, 0, [], {}, collections.Counter()
    while i < len(b):
        sid = b[i]; i += 1
        size, i = leb(b, i)
        end = i + size
        sections[sid] += size
        if sid == 2:  # imports: function imports take the first indexes
            n, j = leb(b, i)
            for _ in range(n):
                for _ in range(2):
                    l, j = leb(b, j); j += l
                kind = b[j]; j += 1
                if kind == 0:
                    _, j = leb(b, j); nimports += 1
                elif kind == 1:
                    j += 1; flags, j = leb(b, j); _, j = leb(b, j)
                    if flags & 1: _, j = leb(b, j)
                elif kind == 2:
                    flags, j = leb(b, j); _, j = leb(b, j)
                    if flags & 1: _, j = leb(b, j)
                else:
                    j += 2
        elif sid == 10:
            n, j = leb(b, i)
            for _ in range(n):
                l, j = leb(b, j); bodies.append(l); j += l
        elif sid == 0:
            l, j = leb(b, i)
            if b[j:j+l] == b'name':
                j += l
                while j < end:
                    sub = b[j]; j += 1
                    sl, j = leb(b, j); se = j + sl
                    if sub == 1:
                        n, j = leb(b, j)
                        for _ in range(n):
                            idx, j = leb(b, j); nl, j = leb(b, j)
                            names[idx] = b[j:j+nl].decode('utf-8', 'replace'); j += nl
                    j = se
        i = end
    pk = collections.Counter()
    for k, sz in enumerate(bodies):
        name = names.get(k + nimports, '?')
        name = re.sub(r'\[.*?\]', '', name)
        # Go names a function "<package path with / as _>.<name>".
        m = re.match(r'^((?:[a-z0-9-]+\.)+(?:com|org|io|net|in|dev)_)?([^.]*)', name)
        pkg = (m.group(1) or '') + m.group(2)
        if only is None:
            pk[pkg] += sz
        elif pkg == only:
            # "<pkg>.(*T).M" (named "<pkg>.__T_.M"), "<pkg>.T.M", "<pkg>.F",
            # "<pkg>.F.func1", "<pkg>.G[go.shape.int8]": grouped by T, F or G.
            rest = name[m.end():].lstrip('.')
            t = re.match(r'^_*([A-Za-z0-9]+)', rest)
            pk[t.group(1) if t else rest] += sz
    total = len(b)
    print(f"file {total} bytes; code {sections[10]}; data {sections[11]}; other {total - sections[10] - sections[11]}")
    print(f"{'package' if only is None else only + ' type or function':60} {'code bytes':>11}")
    for p, s in pk.most_common(top):
        print(f"{p:60} {s:11d}")

if __name__ == "__main__": main()
