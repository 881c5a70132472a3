"""A minimal Redis protocol (RESP2) client for the campaign scripts: no
dependency beyond the standard library, so the scripts run on a bare
machine. Only what the scripts need: commands, pipelines, raw bytes."""

import socket


class RespError(Exception):
    """An error reply (`-ERR ...`)."""


class Client:
    def __init__(self, addr, timeout=10.0):
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb")

    def close(self):
        try:
            self.reader.close()
            self.sock.close()
        except OSError:
            pass

    @staticmethod
    def encode(*args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if not isinstance(a, bytes):
                a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def send_raw(self, data):
        self.sock.sendall(data)

    def read_reply(self):
        line = self.reader.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("connection closed mid-reply")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RespError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.reader.read(n + 2)
            if len(data) != n + 2:
                raise ConnectionError("connection closed mid-reply")
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            if n < 0:
                return None
            return [self.read_reply() for _ in range(n)]
        raise ConnectionError("unexpected reply %r" % line[:80])

    def call(self, *args):
        self.send_raw(self.encode(*args))
        reply = self.read_reply()
        if isinstance(reply, RespError):
            raise reply
        return reply

    def pipeline(self, commands):
        self.send_raw(b"".join(self.encode(*c) for c in commands))
        return [self.read_reply() for _ in commands]
