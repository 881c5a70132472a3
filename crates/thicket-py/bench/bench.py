"""Puts, gets and iteration per second from Python: thicketdb against plyvel
(LevelDB) and rocksdict (RocksDB) when they are installed, on the same data.

    python bench.py [--num 200000] [--value-size 100] [--dir /tmp]

Every engine gets the same keys (b"key%016d", loaded in a seeded random
order), the same values, no sync, default options otherwise except a 64 MiB
write buffer and block cache where the binding lets one set them. Gets read
every key in another seeded random order; the scan reads every pair forward.
Prints one Markdown table row per engine and phase. Not run in CI.
"""

import argparse
import random
import shutil
import tempfile
import time
from importlib.metadata import version


def engines():
    import thicketdb

    def open_thicket(path):
        db = thicketdb.DB(path, write_buffer_size=64 << 20, block_cache_size=64 << 20)
        return db, db.put, db.get, lambda: db.iterator(), db.close

    found = [("thicketdb", version("thicketdb"), open_thicket)]
    try:
        import plyvel

        def open_plyvel(path):
            db = plyvel.DB(
                path, create_if_missing=True, write_buffer_size=64 << 20, lru_cache_size=64 << 20
            )
            return db, db.put, db.get, lambda: db.iterator(), db.close

        found.append(("plyvel (LevelDB)", version("plyvel"), open_plyvel))
    except ImportError:
        pass
    try:
        import rocksdict

        def open_rocksdict(path):
            opts = rocksdict.Options(raw_mode=True)
            opts.create_if_missing(True)
            opts.set_write_buffer_size(64 << 20)
            db = rocksdict.Rdict(path, options=opts)
            return db, db.put, db.get, lambda: db.items(), db.close

        found.append(("rocksdict (RocksDB)", version("rocksdict"), open_rocksdict))
    except ImportError:
        pass
    return found


def rate(n, seconds):
    return f"{n / seconds:,.0f}"


def run(name, opener, keys, value, root):
    path = tempfile.mkdtemp(dir=root, prefix="bench-")
    try:
        db, put, get, scan, close = opener(path)
        start = time.perf_counter()
        for k in keys:
            put(k, value)
        put_s = time.perf_counter() - start

        lookups = list(keys)
        random.Random(2).shuffle(lookups)
        start = time.perf_counter()
        for k in lookups:
            if get(k) is None:
                raise SystemExit(f"{name}: lost {k!r}")
        get_s = time.perf_counter() - start

        start = time.perf_counter()
        count = sum(1 for _ in scan())
        scan_s = time.perf_counter() - start
        if count != len(keys):
            raise SystemExit(f"{name}: scanned {count} of {len(keys)}")
        close()
        n = len(keys)
        print(f"| {name} | {rate(n, put_s)} | {rate(n, get_s)} | {rate(n, scan_s)} |", flush=True)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--num", type=int, default=200_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    keys = [b"key%016d" % i for i in range(args.num)]
    random.Random(1).shuffle(keys)
    value = (b"v%016d|" % 7 * (args.value_size // 18 + 1))[: args.value_size]
    print(f"{args.num} keys of 19 bytes, values of {args.value_size} bytes")
    print("| engine | puts/s | gets/s | scan pairs/s |")
    print("|---|---|---|---|")
    for name, version, opener in engines():
        run(f"{name} {version}", opener, keys, value, args.dir)


if __name__ == "__main__":
    main()
