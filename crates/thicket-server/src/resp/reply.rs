//! Replies and their encoding in RESP2 and RESP3.

/// The protocol a connection speaks (`HELLO 3` switches to RESP3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Resp2,
    Resp3,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Simple(&'static str),
    Status(String),
    /// The full error line without the leading `-`, e.g. `ERR syntax error`.
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    /// RESP2 `$-1`, RESP3 `_`.
    Nil,
    /// RESP2 `*-1`, RESP3 `_`.
    NilArray,
    Array(Vec<Reply>),
    /// RESP3 `%`; a flat array of key, value pairs in RESP2.
    Map(Vec<(Reply, Reply)>),
    /// RESP3 `=` with format `txt`; a bulk string in RESP2.
    Verbatim(String),
}

impl Reply {
    pub const OK: Reply = Reply::Simple("OK");

    pub fn error(message: impl Into<String>) -> Reply {
        Reply::Error(message.into())
    }

    pub fn bulk(bytes: impl Into<Vec<u8>>) -> Reply {
        Reply::Bulk(bytes.into())
    }

    pub fn optional_bulk(value: Option<Vec<u8>>) -> Reply {
        value.map_or(Reply::Nil, Reply::Bulk)
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    pub fn encode(&self, protocol: Protocol, out: &mut Vec<u8>) {
        match self {
            Reply::Simple(s) => line(out, b'+', s.as_bytes()),
            Reply::Status(s) => line(out, b'+', s.as_bytes()),
            Reply::Error(e) => line(out, b'-', e.as_bytes()),
            Reply::Int(n) => line(out, b':', n.to_string().as_bytes()),
            Reply::Bulk(b) => bulk(out, b'$', b),
            Reply::Nil => match protocol {
                Protocol::Resp2 => out.extend_from_slice(b"$-1\r\n"),
                Protocol::Resp3 => out.extend_from_slice(b"_\r\n"),
            },
            Reply::NilArray => match protocol {
                Protocol::Resp2 => out.extend_from_slice(b"*-1\r\n"),
                Protocol::Resp3 => out.extend_from_slice(b"_\r\n"),
            },
            Reply::Array(items) => {
                line(out, b'*', items.len().to_string().as_bytes());
                for item in items {
                    item.encode(protocol, out);
                }
            }
            Reply::Map(pairs) => {
                match protocol {
                    Protocol::Resp2 => line(out, b'*', (pairs.len() * 2).to_string().as_bytes()),
                    Protocol::Resp3 => line(out, b'%', pairs.len().to_string().as_bytes()),
                }
                for (key, value) in pairs {
                    key.encode(protocol, out);
                    value.encode(protocol, out);
                }
            }
            Reply::Verbatim(text) => match protocol {
                Protocol::Resp2 => bulk(out, b'$', text.as_bytes()),
                Protocol::Resp3 => {
                    let mut body = b"txt:".to_vec();
                    body.extend_from_slice(text.as_bytes());
                    bulk(out, b'=', &body);
                }
            },
        }
    }
}

fn line(out: &mut Vec<u8>, marker: u8, body: &[u8]) {
    out.push(marker);
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n");
}

fn bulk(out: &mut Vec<u8>, marker: u8, body: &[u8]) {
    line(out, marker, body.len().to_string().as_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(reply: Reply, protocol: Protocol) -> String {
        let mut out = Vec::new();
        reply.encode(protocol, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn nil_and_maps_differ_between_protocols() {
        assert_eq!(encoded(Reply::Nil, Protocol::Resp2), "$-1\r\n");
        assert_eq!(encoded(Reply::Nil, Protocol::Resp3), "_\r\n");
        let map = Reply::Map(vec![(Reply::bulk("a"), Reply::Int(1))]);
        assert_eq!(
            encoded(map.clone(), Protocol::Resp2),
            "*2\r\n$1\r\na\r\n:1\r\n"
        );
        assert_eq!(encoded(map, Protocol::Resp3), "%1\r\n$1\r\na\r\n:1\r\n");
    }

    #[test]
    fn scalars() {
        assert_eq!(encoded(Reply::OK, Protocol::Resp2), "+OK\r\n");
        assert_eq!(
            encoded(Reply::error("ERR x"), Protocol::Resp2),
            "-ERR x\r\n"
        );
        assert_eq!(encoded(Reply::Int(-3), Protocol::Resp3), ":-3\r\n");
        assert_eq!(encoded(Reply::bulk(""), Protocol::Resp2), "$0\r\n\r\n");
        assert_eq!(
            encoded(Reply::Verbatim("a".into()), Protocol::Resp3),
            "=5\r\ntxt:a\r\n"
        );
    }
}
