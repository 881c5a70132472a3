"""A writer process killed with SIGKILL loses no acknowledged write."""

import os
import signal
import subprocess
import sys
import textwrap

import thicketdb

WRITER = textwrap.dedent(
    """
    import sys, thicketdb
    db = thicketdb.DB(sys.argv[1], write_buffer_size=1 << 18)
    i = 0
    while True:
        with db.write_batch() as batch:
            batch.put(b"key%08d" % i, b"value%d" % i)
            batch.put(b"pair%08d" % i, b"value%d" % i)
        if i % 100 == 0:
            print(i, flush=True)
        i += 1
    """
)


def test_sigkill_keeps_acknowledged_writes(tmp_path):
    path = tmp_path / "db"
    for cycle in range(3):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path)],
            stdout=subprocess.PIPE,
            text=True,
        )
        acked = -1
        for line in proc.stdout:
            acked = int(line)
            if acked >= 3000:
                break
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        assert acked >= 3000, "the writer did not get going"
        with thicketdb.DB(path) as db:
            for i in range(0, acked + 1, 97):
                assert db[b"key%08d" % i] == b"value%d" % i
                assert db[b"pair%08d" % i] == b"value%d" % i
            keys = sum(1 for _ in db.iterator(prefix=b"key", values=False))
            pairs = sum(1 for _ in db.iterator(prefix=b"pair", values=False))
            assert keys == pairs, "a batch was torn"
            assert keys > acked
