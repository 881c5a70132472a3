"""The dict-like API, batches, iterators, snapshots and statistics."""

import pathlib
import re

import pytest

import thicketdb


def test_put_get_delete(db):
    db.put(b"apple", b"red")
    assert db.get(b"apple") == b"red"
    assert db.get(b"pear") is None
    assert db.get(b"pear", b"green") == b"green"
    db.delete(b"apple")
    db.delete(b"apple")
    assert db.get(b"apple") is None
    db.put(b"\x00bin\xff", b"", sync=True)
    assert db.get(b"\x00bin\xff") == b""


def test_delete_range_alone_and_in_a_batch(db):
    for k in [b"a", b"b", b"c", b"d", b"e"]:
        db.put(k, b"v")
    snap = db.snapshot()
    db.delete_range(b"b", b"d")
    assert list(db) == [b"a", b"d", b"e"]
    assert snap.get(b"c") == b"v", "a snapshot older than the tombstone sees the keys"
    with db.write_batch() as batch:
        batch.put(b"f", b"v")
        batch.delete_range(b"d", b"f")
        assert len(batch) == 2
    assert list(db) == [b"a", b"f"]
    db.delete_range(b"z", b"a", sync=True)
    assert list(db) == [b"a", b"f"], "an inverted range removes nothing"


def test_mapping_protocol(db):
    db[b"k"] = b"v"
    assert db[b"k"] == b"v"
    assert b"k" in db
    assert b"other" not in db
    del db[b"k"]
    with pytest.raises(thicketdb.NotFoundError):
        db[b"k"]
    with pytest.raises(KeyError):
        db[b"k"]


def test_keys_and_values_must_be_bytes(db):
    with pytest.raises(TypeError):
        db.put("text", b"v")
    with pytest.raises(TypeError):
        db.get(1)


def test_write_batch_is_atomic_and_discarded_on_exception(db):
    with db.write_batch() as batch:
        batch.put(b"a", b"1")
        batch.put(b"b", b"2")
        batch.delete(b"a")
        assert len(batch) == 3
        assert db.get(b"b") is None, "nothing is visible before the block ends"
    assert db.get(b"a") is None
    assert db.get(b"b") == b"2"

    with pytest.raises(RuntimeError):
        with db.write_batch() as batch:
            batch.put(b"c", b"3")
            raise RuntimeError("abandon")
    assert db.get(b"c") is None

    batch = db.write_batch(sync=True)
    batch.put(b"d", b"4")
    batch.write()
    assert db[b"d"] == b"4"
    with pytest.raises(thicketdb.Error):
        batch.write()


def test_oversized_key_is_invalid_argument(db):
    with pytest.raises(thicketdb.InvalidArgumentError):
        db.put(b"k" * 70000, b"v")
    with pytest.raises(ValueError):
        db.write_batch().put(b"k" * 70000, b"v")


def fill(db, n=100):
    for i in range(n):
        db.put(b"key%03d" % i, b"value%d" % i)


def test_iterator_ranges_and_directions(db):
    fill(db)
    db.put(b"other", b"x")
    items = list(db.iterator())
    assert len(items) == 101
    assert items[0] == (b"key000", b"value0")
    assert [k for k, _ in items] == sorted(k for k, _ in items)

    keys = list(db.iterator(start=b"key010", stop=b"key015", values=False))
    assert keys == [b"key%03d" % i for i in range(10, 15)]
    values = list(db.iterator(start=b"key098", keys=False))
    assert values == [b"value98", b"value99", b"x"]
    assert list(db.iterator(prefix=b"key09", values=False, reverse=True)) == [
        b"key%03d" % i for i in range(99, 89, -1)
    ]
    assert list(db.iterator(reverse=True, stop=b"key002")) == [
        (b"key001", b"value1"),
        (b"key000", b"value0"),
    ]
    assert list(db.iterator(prefix=b"none")) == []
    assert list(db) == [k for k, _ in items]
    with pytest.raises(thicketdb.InvalidArgumentError):
        db.iterator(prefix=b"k", start=b"a")


def test_iterator_sees_one_state(db):
    fill(db, 10)
    it = db.iterator(values=False)
    db.put(b"key005x", b"new")
    db.delete(b"key000")
    assert len(list(it)) == 10
    assert next(it, None) is None


def test_snapshot_reads_the_past(db):
    fill(db, 10)
    with db.snapshot() as snap:
        db.put(b"key000", b"changed")
        db.delete(b"key001")
        db.put(b"key100", b"added")
        assert snap.get(b"key000") == b"value0"
        assert snap.get(b"key001") == b"value1"
        assert snap.get(b"key100") is None
        assert snap.get(b"key100", b"-") == b"-"
        assert len(list(snap.iterator())) == 10
        assert len(list(db.iterator(snapshot=snap))) == 10
        assert list(snap.iterator(reverse=True, keys=False))[0] == b"value9"
    with pytest.raises(thicketdb.Error):
        snap.get(b"key000")
    assert db.get(b"key000") == b"changed"


def test_stats_property_and_compaction(db):
    fill(db, 2000)
    db.flush()
    stats = db.stats()
    assert stats["user_writes"] == 2000
    assert stats["tables"] >= 1
    assert isinstance(stats["tables_per_level"], list)
    # The flush wrote a table, and the binding's write amplification is
    # the engine's definition over the counters it reports beside it.
    assert stats["flush_bytes_written"] > 0
    written = (
        stats["flush_bytes_written"]
        + stats["compaction_bytes_written"]
        + stats["manifest_bytes_written"]
    )
    assert stats["write_amplification"] == pytest.approx(
        written / stats["user_bytes_written"]
    )
    assert stats["write_amplification"] > 0
    db.compact_range()
    db.compact_range(b"key0", b"key1")
    assert db.approximate_size(b"key000", b"key999") > 0
    assert "Level" in db.property("leveldb.stats")
    assert db.property("leveldb.num-files-at-level0") is not None
    assert db.property("nope") is None
    assert len(list(db.iterator())) == 2000


def test_options_and_profiles(tmp_path):
    path = tmp_path / "db"
    with thicketdb.DB(path, profile="leveldb", compression="lz4", log_mmap=False) as db:
        db.put(b"k", b"v")
    with pytest.raises(thicketdb.InvalidArgumentError, match="profile"):
        thicketdb.DB(path, profile="sifr")
    with pytest.raises(thicketdb.InvalidArgumentError, match="unknown option"):
        thicketdb.DB(path, profile="leveldb", no_such_option=1)
    with pytest.raises(thicketdb.InvalidArgumentError):
        thicketdb.DB(path, profile="nonsense")
    with pytest.raises(thicketdb.InvalidArgumentError, match="exists"):
        thicketdb.DB(path, profile="leveldb", error_if_exists=True)
    with thicketdb.DB(path, profile="leveldb") as db:
        assert db[b"k"] == b"v"
        assert str(path) in repr(db)
        assert db.path == path
    assert db.closed


def test_every_profile_opens_and_the_stub_names_them_all(tmp_path):
    for i, profile in enumerate(thicketdb.PROFILES):
        with thicketdb.DB(tmp_path / str(i), profile=profile) as db:
            db.put(b"k", profile.encode())
            assert db.get(b"k") == profile.encode()
    stub = (pathlib.Path(thicketdb.__file__).parent / "__init__.pyi").read_text()
    literal = re.search(r"_Profile = Literal\[(.*?)\]", stub, re.S).group(1)
    assert re.findall(r'"([^"]+)"', literal) == list(thicketdb.PROFILES)


def test_missing_store_without_create(tmp_path):
    with pytest.raises(thicketdb.InvalidArgumentError, match="create_if_missing"):
        thicketdb.DB(tmp_path / "absent", create_if_missing=False)


def test_second_open_is_locked(tmp_path, db):
    with pytest.raises(thicketdb.LockedError):
        thicketdb.DB(db.path)


def test_closed_store_refuses_calls(tmp_path):
    db = thicketdb.DB(tmp_path / "db")
    db.put(b"k", b"v")
    it = db.iterator()
    db.close()
    db.close()
    with pytest.raises(thicketdb.ClosedError):
        db.get(b"k")
    with pytest.raises(thicketdb.ClosedError):
        db.iterator()
    # An iterator made before close keeps reading its state.
    assert list(it) == [(b"k", b"v")]


def test_iterator_keeps_the_store_alive(tmp_path):
    def make():
        db = thicketdb.DB(tmp_path / "db")
        db.put(b"k", b"v")
        return db.iterator()

    it = make()
    import gc

    gc.collect()
    assert list(it) == [(b"k", b"v")]


def test_corruption_is_reported(tmp_path):
    path = tmp_path / "db"
    with thicketdb.DB(path) as db:
        db.put(b"k", b"v")
    (path / "CURRENT").write_text("garbage\n")
    with pytest.raises(thicketdb.CorruptionError):
        thicketdb.DB(path)
    report = thicketdb.repair(path)
    assert "recovered" in report
    with thicketdb.DB(path) as db:
        assert db[b"k"] == b"v"


def test_repair_rebuilds_a_lost_manifest(tmp_path):
    path = tmp_path / "db"
    with thicketdb.DB(path, write_buffer_size=1 << 16) as db:
        for i in range(3000):
            db.put(b"k%05d" % i, b"v" * 50)
        db.flush()
    for f in path.iterdir():
        if f.name.startswith("MANIFEST-") or f.name == "CURRENT":
            f.unlink()
    report = thicketdb.repair(path)
    assert "dropped" not in report, report
    with thicketdb.DB(path) as db:
        assert len(list(db.iterator(values=False))) == 3000


def test_destroy(tmp_path):
    path = tmp_path / "db"
    with thicketdb.DB(path) as db:
        db.put(b"k", b"v")
        with pytest.raises(thicketdb.LockedError):
            thicketdb.destroy(path)
    thicketdb.destroy(path)
    assert not path.exists()


def test_stats_has_every_engine_field(db):
    stats = db.stats()
    # A sample across kinds: counters, per-level lists, floats, flags, text.
    for name in ("fsyncs_log", "merges_resumed", "level_bytes_written",
                 "write_amplification", "merge_in_progress", "background_error",
                 "holes_punched"):
        assert name in stats, name
    assert stats["background_error"] is None
