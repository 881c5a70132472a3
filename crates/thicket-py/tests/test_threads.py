"""Concurrent use from Python threads: the GIL is released during engine
calls, and every class may be shared between threads."""

import threading

import thicketdb


def test_writers_and_readers_in_threads(db):
    errors = []
    per_thread = 2000

    def writer(t):
        try:
            for i in range(per_thread):
                db.put(b"t%d-%05d" % (t, i), b"%d" % i)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def reader():
        try:
            for _ in range(20):
                keys = list(db.iterator(values=False))
                assert keys == sorted(keys)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(list(db.iterator())) == 4 * per_thread
    for t in range(4):
        assert db[b"t%d-%05d" % (t, per_thread - 1)] == b"%d" % (per_thread - 1)


def test_shared_iterator_yields_each_key_once(db):
    for i in range(5000):
        db.put(b"%05d" % i, b"")
    it = db.iterator(values=False)
    seen = []
    lock = threading.Lock()

    def drain():
        for key in it:
            with lock:
                seen.append(key)

    threads = [threading.Thread(target=drain) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(seen) == [b"%05d" % i for i in range(5000)]


def test_batches_from_threads_are_atomic(db):
    def batch_writer(t):
        for round_ in range(50):
            with db.write_batch() as batch:
                batch.put(b"a%d" % t, b"%d" % round_)
                batch.put(b"b%d" % t, b"%d" % round_)

    threads = [threading.Thread(target=batch_writer, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for _ in range(200):
        with db.snapshot() as snap:
            for t in range(4):
                assert snap.get(b"a%d" % t) == snap.get(b"b%d" % t)
    for t in threads:
        t.join()
