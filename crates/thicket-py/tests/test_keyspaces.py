"""Keyspaces: namespaces, cross-keyspace batches, snapshots, drop, reopen, errors."""

import pytest

import thicketdb


def test_keyspaces_are_separate_namespaces(db):
    users = db.create_keyspace("users", profile="sifr", compression="none")
    assert users.name == "users"
    assert db.list_keyspaces() == ["default", "users"]
    users.put(b"alice", b"admin")
    db.put(b"alice", b"default")
    assert users.get(b"alice") == b"admin"
    assert db.get(b"alice") == b"default"
    assert users.get(b"bob") is None and users.get(b"bob", b"x") == b"x"
    users[b"bob"] = b"guest"
    assert users[b"bob"] == b"guest" and b"bob" in users and b"bob" not in db
    del users[b"bob"]
    with pytest.raises(thicketdb.NotFoundError):
        users[b"bob"]
    for k in [b"r1", b"r2", b"r3", b"r4"]:
        users.put(k, b"v", sync=True)
    users.delete_range(b"r2", b"r4")
    assert list(users) == [b"alice", b"r1", b"r4"]
    assert list(users.iterator(prefix=b"r", reverse=True, values=False)) == [b"r4", b"r1"]
    users.delete(b"r1")
    users.compact_range()
    assert list(users.iterator(start=b"b")) == [(b"r4", b"v")]
    assert list(db) == [b"alice"]
    again = db.keyspace("users")
    assert again.get(b"alice") == b"admin"
    assert db.keyspace("default").get(b"alice") == b"default"


def test_batch_across_keyspaces_is_atomic(db):
    users = db.create_keyspace("users")
    logs = db.create_keyspace("logs")
    users.put(b"stale", b"x")
    with db.write_batch() as batch:
        batch.put(b"count", b"2")
        batch.put(b"bob", b"guest", keyspace=users)
        batch.delete(b"stale", keyspace=users)
        batch.put(b"l1", b"x", keyspace=logs)
        batch.put(b"l2", b"x", keyspace=logs)
        batch.delete_range(b"l1", b"l2", keyspace=logs)
        assert len(batch) == 6
    assert db.get(b"count") == b"2" and db.get(b"bob") is None
    assert users.get(b"bob") == b"guest" and users.get(b"stale") is None
    assert list(logs) == [b"l2"]
    # An exception discards the whole batch, every keyspace's part of it.
    with pytest.raises(RuntimeError):
        with db.write_batch() as batch:
            batch.put(b"count", b"3")
            batch.put(b"carol", b"x", keyspace=users)
            raise RuntimeError("abort")
    assert db.get(b"count") == b"2" and users.get(b"carol") is None
    # A bad op fails the batch before anything is written.
    batch = db.write_batch()
    batch.put(b"fine", b"x", keyspace=users)
    with pytest.raises(thicketdb.InvalidArgumentError):
        batch.put(b"k" * 70000, b"x", keyspace=logs)
    batch.write()
    assert users.get(b"fine") == b"x"


def test_snapshots_read_every_keyspace_at_one_point(db):
    users = db.create_keyspace("users")
    users.put(b"k", b"old")
    db.put(b"k", b"old")
    with db.snapshot() as snap:
        with db.write_batch() as batch:
            batch.put(b"k", b"new")
            batch.put(b"k", b"new", keyspace=users)
        assert snap.get(b"k", keyspace=users) == b"old"
        assert snap.get(b"k") == b"old"
        assert list(snap.iterator(keyspace=users)) == [(b"k", b"old")]
        assert list(users.iterator(snapshot=snap)) == [(b"k", b"old")]
    assert users.get(b"k") == b"new"


def test_drop_and_reopen(tmp_path):
    path = tmp_path / "db"
    with thicketdb.DB(path) as db:
        users = db.create_keyspace("users", write_buffer_size=1 << 20)
        temp = db.create_keyspace("temp")
        users.put(b"alice", b"admin")
        temp.put(b"t", b"1")
        db.drop_keyspace("temp")
        assert db.list_keyspaces() == ["default", "users"]
        with pytest.raises(thicketdb.KeyspaceNotFoundError):
            temp.get(b"t")
        with pytest.raises(thicketdb.KeyspaceNotFoundError):
            temp.put(b"t", b"2")
        with pytest.raises(thicketdb.KeyspaceNotFoundError):
            list(temp)
    with thicketdb.DB(path) as db:
        assert db.list_keyspaces() == ["default", "users"]
        assert db.keyspace("users").get(b"alice") == b"admin"
        with pytest.raises(thicketdb.KeyspaceNotFoundError):
            db.keyspace("temp")
        temp = db.create_keyspace("temp")
        assert temp.get(b"t") is None, "a dropped keyspace's data never comes back"


def test_keyspace_errors(tmp_path, db):
    db.create_keyspace("users")
    with pytest.raises(thicketdb.InvalidArgumentError):
        db.create_keyspace("users")
    with pytest.raises(thicketdb.InvalidArgumentError):
        db.create_keyspace("")
    with pytest.raises(thicketdb.InvalidArgumentError):
        db.create_keyspace("x", no_such_option=1)
    with pytest.raises(thicketdb.InvalidArgumentError):
        db.drop_keyspace("default")
    with pytest.raises(thicketdb.KeyspaceNotFoundError) as missing:
        db.keyspace("nope")
    assert isinstance(missing.value, KeyError) and isinstance(missing.value, thicketdb.Error)
    with pytest.raises(thicketdb.KeyspaceNotFoundError):
        db.drop_keyspace("nope")
    with pytest.raises(TypeError):
        db.write_batch().put(b"k", b"v", keyspace="users")
    path = tmp_path / "closing"
    other = thicketdb.DB(path)
    ks = other.create_keyspace("users")
    other.close()
    with pytest.raises(thicketdb.ClosedError):
        ks.get(b"k")
    with pytest.raises(thicketdb.ClosedError):
        other.list_keyspaces()
