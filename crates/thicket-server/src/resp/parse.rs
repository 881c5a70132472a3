//! An incremental parser of client requests: RESP multibulk frames
//! (`*N\r\n$len\r\narg\r\n...`) and inline commands (`PING\r\n`).
//!
//! It keeps the partly received multibulk between calls, so a request that
//! arrives in many small reads is scanned once, not once per read. Every
//! length a client announces is checked against `Limits` before anything is
//! allocated for it.

use crate::limits::Limits;

/// A request: the command name and its arguments, as sent.
pub type Args = Vec<Vec<u8>>;

/// Longest `*N` or `$N` header line, as Redis (`PROTO_INLINE_MAX_SIZE` is
/// for inline requests; headers are a few digits).
const MAX_HEADER_LINE: usize = 64;

/// Bytes charged for each argument on top of its length, so that a million
/// empty arguments count against the request limit too.
const ARG_OVERHEAD: usize = std::mem::size_of::<Vec<u8>>();

/// A request the parser refuses; the connection replies with the message
/// (as Redis does) and closes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Protocol error: {0}")]
pub struct ProtocolError(pub String);

fn protocol_error(message: impl Into<String>) -> ProtocolError {
    ProtocolError(message.into())
}

/// A multibulk request being received.
#[derive(Debug, Default)]
struct Partial {
    remaining: usize,
    args: Args,
    /// Argument bytes (plus `ARG_OVERHEAD` each) received so far.
    bytes: usize,
}

#[derive(Debug)]
pub struct RequestParser {
    limits: Limits,
    partial: Option<Partial>,
}

impl RequestParser {
    pub fn new(limits: Limits) -> RequestParser {
        RequestParser {
            limits,
            partial: None,
        }
    }

    /// Parses from the front of `buf`. Returns the bytes consumed and the
    /// request completed by them, if any; call again with the rest. An
    /// incomplete request consumes what it could and returns `None`.
    /// Empty requests (`*0`, `*-1`, blank lines) are consumed silently.
    pub fn parse(&mut self, buf: &[u8]) -> Result<(usize, Option<Args>), ProtocolError> {
        let mut pos = 0;
        loop {
            let Some(partial) = self.partial.as_mut() else {
                let Some(&first) = buf.get(pos) else {
                    return Ok((pos, None));
                };
                if first != b'*' {
                    return self.parse_inline(buf, pos);
                }
                let Some((count, next)) = header(buf, pos, b'*')? else {
                    return Ok((pos, None));
                };
                pos = next;
                if count <= 0 {
                    continue;
                }
                let count = usize::try_from(count).unwrap_or(usize::MAX);
                if count > self.limits.max_multibulk_len {
                    return Err(protocol_error("invalid multibulk length"));
                }
                self.partial = Some(Partial {
                    remaining: count,
                    // Grows as arguments arrive: a claimed count costs nothing.
                    args: Vec::with_capacity(count.min(16)),
                    bytes: 0,
                });
                continue;
            };
            if partial.remaining == 0 {
                let done = self.partial.take().map(|p| p.args);
                return Ok((pos, done));
            }
            let Some(&first) = buf.get(pos) else {
                return Ok((pos, None));
            };
            if first != b'$' {
                return Err(protocol_error(format!(
                    "expected '$', got '{}'",
                    char::from(first)
                )));
            }
            let Some((len, body)) = header(buf, pos, b'$')? else {
                return Ok((pos, None));
            };
            let len = usize::try_from(len).map_err(|_| protocol_error("invalid bulk length"))?;
            if len > self.limits.max_bulk_len {
                return Err(protocol_error("invalid bulk length"));
            }
            partial.bytes += len + ARG_OVERHEAD;
            if partial.bytes > self.limits.max_request_bytes {
                return Err(protocol_error("request exceeds the size limit"));
            }
            // Wait for the whole argument; the header is re-read then.
            if buf.len() < body + len + 2 {
                partial.bytes -= len + ARG_OVERHEAD;
                return Ok((pos, None));
            }
            if &buf[body + len..body + len + 2] != b"\r\n" {
                return Err(protocol_error("bulk argument not followed by CRLF"));
            }
            partial.args.push(buf[body..body + len].to_vec());
            partial.remaining -= 1;
            pos = body + len + 2;
        }
    }

    /// How many bytes the parser needs in the buffer to make progress on the
    /// argument it waits for (so the reader can reserve it at once).
    pub fn wanted(&self, buf: &[u8]) -> Option<usize> {
        self.partial.as_ref()?;
        let (len, body) = header(buf, 0, b'$').ok()??;
        usize::try_from(len).ok().map(|len| body + len + 2)
    }

    fn parse_inline(
        &mut self,
        buf: &[u8],
        pos: usize,
    ) -> Result<(usize, Option<Args>), ProtocolError> {
        let rest = &buf[pos..];
        let Some(newline) = rest.iter().position(|&b| b == b'\n') else {
            if rest.len() > self.limits.max_inline_len {
                return Err(protocol_error("too big inline request"));
            }
            return Ok((pos, None));
        };
        if newline > self.limits.max_inline_len {
            return Err(protocol_error("too big inline request"));
        }
        let line = rest[..newline]
            .strip_suffix(b"\r")
            .unwrap_or(&rest[..newline]);
        let args = split_inline(line)?;
        let consumed = pos + newline + 1;
        if args.is_empty() {
            // A blank line (e.g. a lone CRLF between requests) is skipped.
            return self.parse(&buf[consumed..]).map(|(n, a)| (consumed + n, a));
        }
        if args.len() > self.limits.max_multibulk_len {
            return Err(protocol_error("invalid multibulk length"));
        }
        Ok((consumed, Some(args)))
    }
}

/// Reads a `<marker><integer>\r\n` line at `pos`. `None`: incomplete.
fn header(buf: &[u8], pos: usize, marker: u8) -> Result<Option<(i64, usize)>, ProtocolError> {
    let Some(rest) = buf.get(pos + 1..) else {
        return Ok(None);
    };
    let Some(cr) = rest.iter().take(MAX_HEADER_LINE).position(|&b| b == b'\r') else {
        if rest.len() >= MAX_HEADER_LINE {
            let what = if marker == b'*' { "mbulk" } else { "bulk" };
            return Err(protocol_error(format!("too big {what} count string")));
        }
        return Ok(None);
    };
    let Some(&lf) = rest.get(cr + 1) else {
        return Ok(None);
    };
    let invalid = || {
        protocol_error(if marker == b'*' {
            "invalid multibulk length"
        } else {
            "invalid bulk length"
        })
    };
    if lf != b'\n' {
        return Err(invalid());
    }
    let value = std::str::from_utf8(&rest[..cr])
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(invalid)?;
    Ok(Some((value, pos + 1 + cr + 2)))
}

/// Splits an inline request into arguments as Redis's `sdssplitargs`:
/// whitespace separates, `"..."` takes `\n`, `\t`, `\xHH`... escapes,
/// `'...'` takes `\'`; a closing quote must be followed by a space.
fn split_inline(line: &[u8]) -> Result<Args, ProtocolError> {
    let unbalanced = || protocol_error("unbalanced quotes in request");
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while line.get(i).is_some_and(|b| b.is_ascii_whitespace()) {
            i += 1;
        }
        if i >= line.len() {
            return Ok(args);
        }
        let mut arg = Vec::new();
        match line[i] {
            b'"' => {
                i += 1;
                loop {
                    match *line.get(i).ok_or_else(unbalanced)? {
                        b'\\'
                            if line.get(i + 1) == Some(&b'x')
                                && line.get(i + 2).is_some_and(u8::is_ascii_hexdigit)
                                && line.get(i + 3).is_some_and(u8::is_ascii_hexdigit) =>
                        {
                            let hex = std::str::from_utf8(&line[i + 2..i + 4]).unwrap_or("00");
                            arg.push(u8::from_str_radix(hex, 16).unwrap_or(0));
                            i += 4;
                        }
                        b'\\' if i + 1 < line.len() => {
                            arg.push(match line[i + 1] {
                                b'n' => b'\n',
                                b'r' => b'\r',
                                b't' => b'\t',
                                b'b' => 8,
                                b'a' => 7,
                                other => other,
                            });
                            i += 2;
                        }
                        b'"' => {
                            i += 1;
                            break;
                        }
                        other => {
                            arg.push(other);
                            i += 1;
                        }
                    }
                }
                if line.get(i).is_some_and(|b| !b.is_ascii_whitespace()) {
                    return Err(unbalanced());
                }
            }
            b'\'' => {
                i += 1;
                loop {
                    match *line.get(i).ok_or_else(unbalanced)? {
                        b'\\' if line.get(i + 1) == Some(&b'\'') => {
                            arg.push(b'\'');
                            i += 2;
                        }
                        b'\'' => {
                            i += 1;
                            break;
                        }
                        other => {
                            arg.push(other);
                            i += 1;
                        }
                    }
                }
                if line.get(i).is_some_and(|b| !b.is_ascii_whitespace()) {
                    return Err(unbalanced());
                }
            }
            _ => {
                while let Some(&b) = line.get(i).filter(|b| !b.is_ascii_whitespace()) {
                    arg.push(b);
                    i += 1;
                }
            }
        }
        args.push(arg);
    }
}

#[cfg(test)]
mod tests;
