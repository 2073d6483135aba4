"""kv0.DB: the key-value API (aimrocks semantics), write batches,
iterators, versions, read-only handles and errors."""

import os

import pytest

import kv0
from kv0 import errors


@pytest.fixture
def db(tmp_path):
    d = kv0.DB(str(tmp_path / "db"))
    yield d
    d.close()


def test_put_get_delete(db):
    assert db.get(b"missing") is None
    db.put(b"k1", b"v1")
    db.put(b"k2", b"")
    db.put(b"\x00\xff", b"\x00binary\x00")
    assert db.get(b"k1") == b"v1"
    assert db.get(b"k2") == b""
    assert db.get(b"\x00\xff") == b"\x00binary\x00"
    db.put(b"k1", b"v1b", sync=True)
    assert db.get(b"k1") == b"v1b"
    db.delete(b"k1")
    assert db.get(b"k1") is None
    db.delete(b"never-there")
    db.put(b"", b"empty key")
    assert db.get(b"") == b"empty key"
    big = os.urandom(200_000)  # past the receive buffer: returned in an allocated one
    db.put(b"big", big)
    assert db.get(b"big") == big
    assert db.get(b"k2") == b""


def test_delete_range(db):
    for i in range(10):
        db.put(b"k%d" % i, b"v")
    db.delete_range(b"k3", b"k7")
    assert [db.get(b"k%d" % i) is not None for i in range(10)] == [True] * 3 + [False] * 4 + [True] * 3
    db.delete_range(b"k9", b"k0")  # start >= end: nothing
    assert db.get(b"k9") == b"v"


def test_str_refused(db):
    with pytest.raises(TypeError):
        db.put("k", b"v")
    with pytest.raises(TypeError):
        db.put(b"k", "v")
    with pytest.raises(TypeError):
        db.get("k")
    with pytest.raises(TypeError):
        db.delete("k")
    with pytest.raises(TypeError):
        db.multi_get(["k"])
    with pytest.raises(TypeError):
        kv0.WriteBatch().put("k", b"v")
    with pytest.raises(TypeError):
        db.iterkeys().seek("k")
    assert db.get(b"k") is None


def test_multi_get_key_may_exist(db):
    db.put(b"a", b"1")
    db.put(b"c", b"")
    assert db.multi_get([b"a", b"b", b"c"]) == {b"a": b"1", b"b": None, b"c": b""}
    assert db.multi_get([]) == {}
    assert db.key_may_exist(b"a") == (True, None)
    assert db.key_may_exist(b"a", fetch=True) == (True, b"1")
    assert db.key_may_exist(b"zz", fetch=True) == (False, None)


def test_write_batch(db):
    db.put(b"old", b"x")
    db.put(b"r1", b"x")
    db.put(b"r2", b"x")
    wb = kv0.WriteBatch()
    wb.put(b"a", b"1")
    wb.put(b"b", b"2")
    wb.delete(b"old")
    wb.delete_range(b"r", b"s")
    assert len(wb) == 4 and wb.count() == 4
    assert list(wb) == [("Put", b"a", b"1"), ("Put", b"b", b"2"), ("Delete", b"old", b""),
                        ("DeleteRange", b"r", b"s")]
    again = kv0.WriteBatch(wb.data())
    assert list(again) == list(wb) and len(again) == 4
    db.write(wb)
    assert db.multi_get([b"a", b"b", b"old", b"r1", b"r2"]) == {b"a": b"1", b"b": b"2", b"old": None,
                                                                b"r1": None, b"r2": None}
    wb.clear()
    assert len(wb) == 0 and list(wb) == []
    db.write(wb)  # empty: nothing
    db.write(kv0.WriteBatch(), sync=True)
    with pytest.raises(TypeError):
        db.write([("Put", b"a", b"b")])
    with pytest.raises(errors.InvalidArgument):
        list(kv0.WriteBatch(b"\x07\x00"))


def _fill(db, n=100):
    keys = [b"key%03d" % i for i in range(n)]
    for k in keys:
        db.put(k, b"val-" + k)
    return keys


def test_iterators_forward(db):
    keys = _fill(db)
    it = db.iterkeys()
    assert it.next() is None  # unpositioned
    with pytest.raises(ValueError):
        it.get()
    it.seek_to_first()
    assert list(it) == keys
    assert it.next() is None
    with pytest.raises(ValueError):
        it.get()
    with pytest.raises(ValueError):
        it.skip()
    it = db.itervalues()
    it.seek_to_first()
    assert list(it) == [b"val-" + k for k in keys]
    it = db.iteritems()
    it.seek(b"key050")
    assert it.get() == (b"key050", b"val-key050")
    assert it.get() == (b"key050", b"val-key050")  # peek does not move
    assert it.next() == (b"key050", b"val-key050")
    it.skip()
    assert next(it) == (b"key052", b"val-key052")
    it.seek(b"key0505")  # between keys
    assert it.next()[0] == b"key051"
    it.seek(b"zzz")
    assert it.next() is None
    it.seek_for_prev(b"key0505")
    assert it.get()[0] == b"key050"
    it.seek_for_prev(b"a")
    assert it.next() is None
    it.seek_to_last()
    assert list(it) == [(keys[-1], b"val-" + keys[-1])]


def test_iterators_backward(db):
    keys = sorted(_fill(db, 3000))  # several chunks
    it = db.iterkeys()
    it.seek_to_last()
    assert list(reversed(it)) == keys[::-1]
    it = db.iteritems()
    it.seek_for_prev(b"key0505")
    r = reversed(it)
    assert next(r) == (b"key050", b"val-key050")
    assert r.next() == (b"key049", b"val-key049")
    assert reversed(r) is it
    # Switching direction continues from the current entry.
    assert it.next() == (b"key048", b"val-key048")
    assert it.next() == (b"key049", b"val-key049")
    assert next(r) == (b"key050", b"val-key050")
    it = db.itervalues()
    it.seek(b"key002")
    assert list(reversed(it)) == [b"val-key002", b"val-key001", b"val-key000"]
    it = db.iterkeys()
    it.seek_to_first()
    assert [k for _, k in zip(range(2000), it)] == keys[:2000]
    assert list(it) == keys[2000:]


def test_iterator_turns_at_a_fetch_boundary(db):
    # Entries come from the engine in chunks (16, then 64, 256, ...): after
    # a walk has used up every fetched entry, the current entry is the next
    # one the engine holds, and turning round must start from it, in both
    # directions and at every boundary.
    keys = sorted(_fill(db, 400))
    for n in (16, 16 + 64, 16 + 64 + 256):
        it = db.iterkeys()
        it.seek_to_first()
        assert [it.next() for _ in range(n)] == keys[:n]
        r = reversed(it)
        assert r.next() == keys[n], f"turning back after {n}"
        assert r.next() == keys[n - 1]
        it = db.iterkeys()
        it.seek_to_last()
        r = reversed(it)
        assert [r.next() for _ in range(n)] == keys[::-1][:n]
        assert it.next() == keys[-1 - n], f"turning forward after {n}"
        assert it.next() == keys[-n]


def test_iterator_sees_writes_and_survives_close(tmp_path):
    db = kv0.DB(str(tmp_path / "db"))
    db.put(b"a", b"1")
    it = db.iterkeys()
    it.seek_to_first()
    db.put(b"b", b"2")
    assert list(it) == [b"a", b"b"]
    it2 = db.iterkeys()
    db.close()
    it2.seek_to_first()
    with pytest.raises(errors.Closed):
        it2.next()


def test_iterator_yields_nothing_after_close(tmp_path):
    """Entries an iterator fetched ahead are not handed out once its
    database, or the iterator itself, is closed."""
    db = kv0.DB(str(tmp_path / "db"))
    for i in range(100):
        db.put(b"k%03d" % i, b"v")
    it = db.iterkeys()
    it.seek_to_first()
    assert next(it) == b"k000"  # the iterator now holds entries it fetched ahead
    it2 = db.iteritems()
    it2.seek_to_first()
    assert it2.next() == (b"k000", b"v")
    db.close()
    with pytest.raises(errors.Closed):
        next(it)
    with pytest.raises(errors.Closed):
        it2.next()
    with pytest.raises(errors.Closed):
        it2.get()
    db = kv0.DB(str(tmp_path / "db"))
    it = db.iterkeys()
    it.seek_to_first()
    assert next(it) == b"k000"
    it.close()
    with pytest.raises(errors.Closed):
        next(it)
    db.close()


def test_flush_versions_time_travel(tmp_path):
    path = str(tmp_path / "db")
    db = kv0.DB(path)
    db.put(b"k", b"v1")
    db.flush()
    v1 = db.versions()[-1]["version"]
    db.put(b"k", b"v2")
    db.put(b"other", b"x")
    db.flush()
    vs = db.versions()
    assert [v["version"] for v in vs] == sorted(v["version"] for v in vs)
    assert vs[-1]["version"] > v1 and "timestamp" in vs[-1]
    assert db.get_property(b"kv0.version") == str(vs[-1]["version"]).encode()
    db.close()
    old = kv0.DB(path, version=v1)
    assert old.get(b"k") == b"v1" and old.get(b"other") is None
    it = old.iteritems()
    it.seek_to_first()
    assert list(it) == [(b"k", b"v1")]
    assert old.get_property("kv0.version") == str(v1).encode()
    assert old.get_property("kv0.read-only") == b"true"
    with pytest.raises(errors.NotSupported):
        old.put(b"k", b"v3")
    old.close()
    cur = kv0.DB(path, read_only=True)
    assert cur.get(b"k") == b"v2"
    cur.close()
    with pytest.raises(errors.NotFound):  # a version that does not exist
        kv0.DB(path, version=vs[-1]["version"] + 100)


def test_positional_arguments(tmp_path):
    """DB(path, opts, column_families, read_only) as python-rocksdb takes
    them; version is a keyword."""
    path = str(tmp_path / "db")
    with kv0.DB(path, kv0.Options(), [b"default"]) as db:
        db.put(b"k", b"v")  # writable: the third argument is column_families
    with kv0.DB(path, kv0.Options(), None, True) as ro:
        assert ro.read_only and ro.get(b"k") == b"v"
    with pytest.raises(errors.NotSupported):
        kv0.DB(path, None, [b"default", b"other"])
    with pytest.raises(TypeError):
        kv0.DB(path, None, None, True, 1)  # version is keyword-only


def test_empty_location(tmp_path, monkeypatch):
    """An empty location is an error, not the current directory."""
    import kv0.tracking as tracking
    monkeypatch.chdir(tmp_path)
    for loc in ("", "  ", b""):
        with pytest.raises(errors.InvalidArgument):
            kv0.DB(loc)
        with pytest.raises(errors.InvalidArgument):
            tracking.Repo(loc)
    assert os.listdir(tmp_path) == []


def test_read_only_refuses_writes(tmp_path):
    path = str(tmp_path / "db")
    with kv0.DB(path) as db:
        db.put(b"k", b"v")
    ro = kv0.DB(path, read_only=True)
    assert ro.read_only
    assert ro.get(b"k") == b"v"
    wb = kv0.WriteBatch()
    wb.put(b"x", b"y")
    for write in (lambda: ro.put(b"k", b"w"), lambda: ro.delete(b"k"), lambda: ro.delete_range(b"a", b"z"),
                  lambda: ro.write(wb)):
        with pytest.raises(errors.NotSupported):
            write()
    assert ro.get(b"k") == b"v"
    ro.close()
    with pytest.raises(errors.NotFound) as e:
        kv0.DB(str(tmp_path / "nothing"), read_only=True)
    assert isinstance(e.value, FileNotFoundError)


def test_close_and_context_manager(tmp_path):
    path = str(tmp_path / "db")
    with kv0.DB(path) as db:
        db.put(b"k", b"v")
    assert db.closed
    db.close()  # a second close does nothing
    with pytest.raises(errors.Closed):
        db.get(b"k")
    with pytest.raises(errors.Closed):
        db.put(b"k", b"v")
    with kv0.DB(path) as db:
        assert db.get(b"k") == b"v"


def test_options_and_shims(tmp_path):
    opts = kv0.Options(create_if_missing=True, max_open_files=-1, write_buffer_size=1 << 20)
    opts.compression = "zstd"  # unknown engine tuning: ignored
    opts.wal_sync = "always"
    assert opts.write_buffer_size == 1 << 20 and opts.compression == "zstd"
    db = kv0.DB(str(tmp_path / "db"), opts, flush_interval=-1, refresh_interval=2.5)
    assert db.options is opts
    db.put(b"k", b"v")
    cf = db.get_column_family(b"default")
    assert db.column_families == [cf]
    assert db.get(b"k", column_family=cf) == b"v"
    with pytest.raises(errors.NotSupported):
        db.get_column_family(b"other")
    with pytest.raises(errors.NotSupported):
        db.create_column_family(b"other", None)
    with pytest.raises(errors.NotSupported):
        db.drop_column_family(cf)
    with pytest.raises(errors.NotSupported):
        db.merge(b"k", b"v")
    assert db.get_property(b"rocksdb.estimate-num-keys") is None
    assert db.get_property("kv0.read-only") == b"false"
    db.flush_wal()
    db.compact_range()
    assert db.get(b"k") == b"v"
    assert db.cleanup_old_versions(3600) == 0
    db.close()
    with pytest.raises(errors.InvalidArgument):
        kv0.DB(str(tmp_path / "db2"), wal_sync="sometimes")
    with pytest.raises(TypeError):
        kv0.DB(str(tmp_path / "db2"), write_buffer_size="big")
    with pytest.raises(errors.NotSupported):
        kv0.DB(str(tmp_path / "db2"), column_families={b"x": None})


def test_pathlike_and_memory(tmp_path):
    with kv0.DB(tmp_path / "p") as db:
        db.put(b"k", b"v")
    assert (tmp_path / "p").is_dir()
    with kv0.DB("memory://pytest-mem") as m:
        m.put(b"k", b"v")
        assert m.get(b"k") == b"v"
        # A memory:// store is private to its handle.
        with kv0.DB("memory://pytest-mem") as other:
            assert other.get(b"k") is None


def test_error_classes():
    assert issubclass(errors.NotFound, FileNotFoundError) and issubclass(errors.NotFound, errors.Error)
    assert issubclass(errors.StoreIOError, OSError)
    for c in (errors.Corruption, errors.NotSupported, errors.InvalidArgument, errors.Conflict, errors.Closed):
        assert issubclass(c, errors.Error)


def test_store_io_error(tmp_path):
    f = tmp_path / "file"
    f.write_bytes(b"not a folder")
    with pytest.raises(errors.Error) as e:
        kv0.DB(str(f / "db"))
    assert isinstance(e.value, (errors.StoreIOError, errors.NotFound)), type(e.value)
    assert str(f) in str(e.value)


def test_reopen_keeps_unflushed(tmp_path):
    path = str(tmp_path / "db")
    db = kv0.DB(path, flush_interval=-1)
    for i in range(1000):
        db.put(b"%05d" % i, os.urandom(8))
    want = {b"%05d" % i: db.get(b"%05d" % i) for i in range(1000)}
    db.close()
    with kv0.DB(path, read_only=True) as ro:
        assert ro.multi_get(list(want)) == want


def test_version_property(tmp_path):
    path = str(tmp_path / "db")
    with kv0.DB(path) as db:
        v0 = db.version
        db.put(b"k", b"v")
        db.flush()
        v1 = db.version
        assert v1 > v0
        db.put(b"k", b"w")
        db.flush()
        assert db.version > v1
    with kv0.DB(path, version=v1) as old:
        assert old.version == v1 and old.get(b"k") == b"v"


def _lance_info(cli, path):
    import json
    import subprocess
    p = subprocess.run([cli, "lance", "info", "--json", path], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _formats(info):
    return {f["version"] for fr in info["fragments"] for f in fr["files"]}


@pytest.mark.parametrize("create,want,other", [(None, "2.2", "2.1"), ("2.1", "2.1", "2.2"), ("2.2", "2.2", "2.1")])
def test_data_format(tmp_path, cli, create, want, other):
    """data_format picks the Lance file format of a new database (default
    2.2, what lance 12 writes; 2.1 for lance 8 readers); the database
    keeps it, and asking for the other one raises InvalidArgument."""
    path = str(tmp_path / "db")
    kw = {} if create is None else {"data_format": create}
    with kv0.DB(path, **kw) as db:
        db.put(b"a", b"1")
    with kv0.DB(path) as db:  # no format: the database's
        db.put(b"b", b"2")
    with kv0.DB(path, opts=kv0.Options(data_format=want)) as db:
        db.put(b"c", b"3")
    info = _lance_info(cli, path)
    assert info["data_format"] == want and _formats(info) == {want}
    with pytest.raises(errors.InvalidArgument, match=want):
        kv0.DB(path, data_format=other)
    with kv0.DB(path, read_only=True, data_format=other) as db:  # readers ignore it
        assert db.get(b"c") == b"3"
    with pytest.raises(errors.InvalidArgument, match="2.3"):
        kv0.DB(str(tmp_path / "other"), data_format="2.3")
    assert not os.path.exists(tmp_path / "other" / "_versions")
