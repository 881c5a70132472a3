#!/usr/bin/env python3
"""`thicket serve` SIGKILLed under concurrent clients writing acknowledged
counters (part of scripts/soak; runs alone too).

Each round starts the server on one store per profile, first checks every
write acknowledged before the last kill (each client's `SET c<c>:<i> i`
and `HSET h<c> i i`, in databases 0 and 1, and its `INCR ctr<c>`: the
counter holds the acknowledged INCRs, or one more whose reply the kill
cut), then lets the clients write and SIGKILLs the server at a random
moment. Half the rounds run with `--sync`.

    scripts/lib/server_crash.py --thicket target/release/thicket \
        --duration 60 [--seed X] [--clients 6] [--root DIR]
"""

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp import Client  # noqa: E402

PROFILES = ["default", "leveldb", "bolt", "size-tiered", "sifr", "sifr-bolt",
            "lsbm", "triad", "yodb"]
SMALL = {
    "lsm": ["write_buffer_size=131072", "target_table_size=16384"],
    "yodb": ["chunk_size=16384", "funk_log_limit=4096",
             "funk_log_limit_with_munk=8192"],
}


class Failure(Exception):
    pass


def start(thicket, db, profile, sync, options):
    cmd = [thicket, "serve", "--db", db, "--listen", "127.0.0.1:0",
           "--profile", profile, "--threads", "8"]
    for o in options:
        cmd += ["--option", o]
    if sync:
        cmd.append("--sync")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = proc.stdout.readline().decode().strip()
    if not line.startswith("listening on "):
        err = proc.stderr.read().decode(errors="replace") if proc.poll() is not None else ""
        proc.kill()
        proc.wait()
        raise Failure("`%s` did not start: %r %s" % (" ".join(cmd), line, err[-2000:]))
    return proc, line[len("listening on "):], cmd


class Store:
    """One store and what its clients had acknowledged."""

    def __init__(self, path, profile, clients):
        self.path, self.profile = path, profile
        self.acked = [0] * clients
        self.incrs = [0] * clients


def verify(addr, store, round_no):
    c = Client(addr)
    checked = 0
    try:
        for k in range(len(store.acked)):
            c.call("SELECT", k % 2)
            n = store.acked[k]
            for lo in range(0, n, 500):
                hi = min(n, lo + 500)
                keys = ["c%d:%d" % (k, i) for i in range(lo, hi)]
                got = c.call("MGET", *keys)
                fields = c.call("HMGET", "h%d" % k, *[str(i) for i in range(lo, hi)])
                for i, v, f in zip(range(lo, hi), got, fields):
                    if v != str(i).encode() or f != str(i).encode():
                        raise Failure(
                            "round %d, %s: client %d's acknowledged write %d lost "
                            "(GET %r, HGET %r)" % (round_no, store.profile, k, i, v, f))
                checked += 2 * (hi - lo)
            ctr = int(c.call("GET", "ctr%d" % k) or 0)
            if ctr not in (store.incrs[k], store.incrs[k] + 1):
                raise Failure("round %d, %s: client %d's counter is %d, %d INCRs acknowledged"
                              % (round_no, store.profile, k, ctr, store.incrs[k]))
            store.incrs[k] = ctr
            checked += 1
    finally:
        c.close()
    return checked


def writer(addr, store, k, stop):
    try:
        c = Client(addr, timeout=30)
        c.call("SELECT", k % 2)
        i = store.acked[k]
        while not stop.is_set():
            # SET and HSET pipelined: both replies before the write counts.
            r = c.pipeline([("SET", "c%d:%d" % (k, i), i), ("HSET", "h%d" % k, i, i)])
            if r[0] != "OK" or not isinstance(r[1], int):
                return
            store.acked[k] = i + 1
            if not isinstance(c.pipeline([("INCR", "ctr%d" % k)])[0], int):
                return
            store.incrs[k] += 1
            i += 1
    except (OSError, ConnectionError):
        return


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--thicket", required=True)
    ap.add_argument("--duration", type=float, default=60)
    ap.add_argument("--rounds", type=int, default=0, help="0: until --duration")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--root", default=None)
    ap.add_argument("--max-kill-ms", type=int, default=1500)
    ap.add_argument("--profiles", default=",".join(PROFILES))
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    rng = random.Random(seed)
    root = args.root or tempfile.mkdtemp(prefix="thicket-server-crash-")
    os.makedirs(root, exist_ok=True)
    profiles = args.profiles.split(",")
    stores = {p: Store(os.path.join(root, p), p, args.clients) for p in profiles}
    deadline = time.time() + args.duration
    rounds = checked = 0
    replay = "%s --thicket %s --seed %d --clients %d --duration %s --profiles %s --root %s" % (
        sys.argv[0], args.thicket, seed, args.clients, args.duration, args.profiles, root)
    print("server-crash: seed %d, stores in %s" % (seed, root), flush=True)
    try:
        while time.time() < deadline and (args.rounds == 0 or rounds < args.rounds):
            profile = profiles[rounds % len(profiles)]
            store = stores[profile]
            sync = rng.random() < 0.5
            print("server-crash: round %d: %s%s" % (rounds, profile, " --sync" if sync else ""), flush=True)
            options = SMALL["yodb" if profile == "yodb" else "lsm"]
            proc, addr, cmd = start(args.thicket, store.path, profile, sync, options)
            try:
                checked += verify(addr, store, rounds)
                stop = threading.Event()
                threads = [threading.Thread(target=writer, args=(addr, store, k, stop))
                           for k in range(args.clients)]
                for t in threads:
                    t.start()
                time.sleep(rng.uniform(0.05, args.max_kill_ms / 1000))
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                stop.set()
                for t in threads:
                    t.join()
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            if proc.returncode != -signal.SIGKILL:
                raise Failure("`%s` exited with %s before the kill" % (" ".join(cmd), proc.returncode))
            rounds += 1
        # A last check of every store.
        for store in stores.values():
            if os.path.exists(store.path):
                proc, addr, _ = start(args.thicket, store.path, store.profile, False,
                                      SMALL["yodb" if store.profile == "yodb" else "lsm"])
                try:
                    checked += verify(addr, store, rounds)
                finally:
                    proc.kill()
                    proc.wait()
    except Failure as e:
        print("server-crash: FAILED: %s; stores kept in %s; replay: %s" % (e, root, replay),
              file=sys.stderr, flush=True)
        sys.exit(1)
    acked = sum(sum(s.acked) for s in stores.values())
    print("server-crash: passed: %d SIGKILL rounds, %d acknowledged writes, %d checks, seed %d"
          % (rounds, acked, checked, seed), flush=True)
    if not args.root:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
