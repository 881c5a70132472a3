//! The physical layout of a log: 32 KiB blocks of fragments, each behind a
//! 7-byte header (see the log section of `docs/format.md`).

use std::fmt;

use crate::format::checksum;

/// Logs are read and written in blocks of this size; a fragment never
/// crosses a block boundary, so a reader can resynchronise at any block.
pub const BLOCK_SIZE: usize = 32 * 1024;

/// Masked crc32c (4) + payload length (2) + fragment type (1).
pub const HEADER_SIZE: usize = 7;

/// What part of a record a fragment holds. Type 0 is reserved: it is what a
/// zero-filled (preallocated, never written) region decodes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FragmentType {
    /// A whole record.
    Full = 1,
    /// The first piece of a record that spans blocks.
    First = 2,
    /// An inner piece.
    Middle = 3,
    /// The final piece.
    Last = 4,
}

impl FragmentType {
    fn from_byte(byte: u8) -> Option<FragmentType> {
        match byte {
            1 => Some(FragmentType::Full),
            2 => Some(FragmentType::First),
            3 => Some(FragmentType::Middle),
            4 => Some(FragmentType::Last),
            _ => None,
        }
    }

    /// True for the fragments a record starts with.
    pub fn starts_record(self) -> bool {
        matches!(self, FragmentType::Full | FragmentType::First)
    }

    /// True for the fragments a record ends with.
    pub fn ends_record(self) -> bool {
        matches!(self, FragmentType::Full | FragmentType::Last)
    }
}

/// The header of a fragment holding `payload`.
pub fn encode_header(kind: FragmentType, payload: &[u8]) -> [u8; HEADER_SIZE] {
    debug_assert!(payload.len() <= BLOCK_SIZE - HEADER_SIZE);
    let crc = fragment_crc(kind as u8, payload);
    let mut header = [0u8; HEADER_SIZE];
    header[..4].copy_from_slice(&crc.to_le_bytes());
    header[4..6].copy_from_slice(&(payload.len() as u16).to_le_bytes());
    header[6] = kind as u8;
    header
}

/// Masked crc32c over the type byte and the payload: covering the type means
/// a flipped type is caught like any other damage.
fn fragment_crc(kind: u8, payload: &[u8]) -> u32 {
    checksum::mask(checksum::crc32c_two(&[kind], payload))
}

/// A fragment that decoded and passed its checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fragment {
    pub kind: FragmentType,
    /// Payload length; the payload follows the header.
    pub len: usize,
}

/// Why the bytes at a position are not a fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadFragment {
    /// All seven header bytes are zero: a preallocated or zeroed region.
    Zeroed,
    /// Fewer than seven bytes before the end of the file.
    TruncatedHeader,
    /// The type byte is not 1..=4.
    UnknownType(u8),
    /// The length runs past the end of the block.
    LengthPastBlock(usize),
    /// The length fits the block but runs past the end of the file: what a
    /// write cut short by a crash looks like.
    TruncatedPayload(usize),
    /// The checksum does not match.
    Checksum(usize),
    /// The length field is damaged: the payload checks at another length
    /// and a fragment boundary follows it. A torn write cuts a payload
    /// short; it never rewrites a header, so this is never a torn tail.
    DamagedLength { declared: usize, intact: usize },
    /// The type byte is damaged: the payload checks under another type.
    DamagedType { declared: u8, intact: u8, len: usize },
}

impl BadFragment {
    /// The length the header claims, when it at least fits the block: the
    /// reader tries the position after it first when resynchronising.
    pub fn declared_len(self) -> Option<usize> {
        match self {
            BadFragment::Zeroed => Some(0),
            BadFragment::TruncatedPayload(len)
            | BadFragment::Checksum(len)
            | BadFragment::DamagedLength { intact: len, .. }
            | BadFragment::DamagedType { len, .. } => Some(len),
            BadFragment::TruncatedHeader
            | BadFragment::UnknownType(_)
            | BadFragment::LengthPastBlock(_) => None,
        }
    }

    /// True when the damage cannot be what a crash leaves at the end of a
    /// log: the record was written whole, so dropping it as a torn tail
    /// would lose an acknowledged write without a word.
    pub fn is_media_damage(self) -> bool {
        matches!(
            self,
            BadFragment::DamagedLength { .. } | BadFragment::DamagedType { .. }
        )
    }
}

impl fmt::Display for BadFragment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadFragment::Zeroed => f.write_str("zero-filled region"),
            BadFragment::TruncatedHeader => f.write_str("fragment header cut short by end of file"),
            BadFragment::UnknownType(t) => write!(f, "unknown fragment type {t}"),
            BadFragment::LengthPastBlock(len) => {
                write!(f, "fragment length {len} runs past the end of its block")
            }
            BadFragment::TruncatedPayload(len) => {
                write!(f, "fragment of {len} bytes cut short by end of file")
            }
            BadFragment::Checksum(_) => f.write_str("fragment checksum mismatch"),
            BadFragment::DamagedLength { declared, intact } => write!(
                f,
                "fragment length field reads {declared}, but its checksum matches {intact} bytes"
            ),
            BadFragment::DamagedType {
                declared, intact, ..
            } => write!(
                f,
                "fragment type byte reads {declared}, but its checksum matches type {intact}"
            ),
        }
    }
}

/// A decoded fragment header whose payload is not checked yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentHeader {
    pub kind: FragmentType,
    /// Payload length; the payload follows the header.
    pub len: usize,
    stored_crc: u32,
}

impl FragmentHeader {
    /// Checks the payload the header announced (`len` bytes) against the
    /// stored checksum.
    pub fn verify(&self, payload: &[u8]) -> Result<Fragment, BadFragment> {
        if fragment_crc(self.kind as u8, payload) != self.stored_crc {
            return Err(BadFragment::Checksum(self.len));
        }
        Ok(Fragment {
            kind: self.kind,
            len: self.len,
        })
    }
}

/// Decodes a fragment header; `room` is the distance from the header to the
/// end of its block, which the header and payload must fit in.
pub fn decode_header(
    header: &[u8; HEADER_SIZE],
    room: usize,
) -> Result<FragmentHeader, BadFragment> {
    if header == &[0u8; HEADER_SIZE] {
        return Err(BadFragment::Zeroed);
    }
    let stored_crc = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    let len = usize::from(u16::from_le_bytes([header[4], header[5]]));
    let type_byte = header[6];
    let kind = FragmentType::from_byte(type_byte).ok_or(BadFragment::UnknownType(type_byte))?;
    if HEADER_SIZE + len > room {
        return Err(BadFragment::LengthPastBlock(len));
    }
    Ok(FragmentHeader {
        kind,
        len,
        stored_crc,
    })
}

/// Decodes the fragment at the start of `data`, the bytes from the header to
/// the end of the block's data; `room` is the distance from the header to
/// the end of the block (more than `data.len()` only in the last, short
/// block of a file).
pub fn decode_fragment(data: &[u8], room: usize) -> Result<Fragment, BadFragment> {
    let Some(header) = data.first_chunk::<HEADER_SIZE>() else {
        return Err(BadFragment::TruncatedHeader);
    };
    let header = decode_header(header, room)?;
    let payload = data
        .get(HEADER_SIZE..HEADER_SIZE + header.len)
        .ok_or(BadFragment::TruncatedPayload(header.len))?;
    header.verify(payload)
}

/// Tells a damaged header apart from a torn write: looks for a payload that
/// checks under another length (same type) or another type (same length)
/// and is followed by a fragment boundary (the next valid fragment, zeros
/// to the end of the block, or the end of the data). `data` and `room` are
/// as for [`decode_fragment`], which already failed on them.
pub fn diagnose_header(data: &[u8], room: usize) -> Option<BadFragment> {
    let header = data.first_chunk::<HEADER_SIZE>()?;
    if header == &[0u8; HEADER_SIZE] {
        return None;
    }
    let stored_crc = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    let declared = usize::from(u16::from_le_bytes([header[4], header[5]]));
    let type_byte = header[6];
    let payload = &data[HEADER_SIZE..];
    let is_boundary = |end: usize| {
        let rest = &data[HEADER_SIZE + end..];
        let room_left = room - HEADER_SIZE - end;
        rest.is_empty()
            || (room_left < HEADER_SIZE && rest.iter().all(|&b| b == 0))
            || decode_fragment(rest, room_left).is_ok()
    };
    if let Some(payload) = payload.get(..declared) {
        for kind in [
            FragmentType::Full,
            FragmentType::First,
            FragmentType::Middle,
            FragmentType::Last,
        ] {
            if kind as u8 != type_byte
                && fragment_crc(kind as u8, payload) == stored_crc
                && is_boundary(declared)
            {
                return Some(BadFragment::DamagedType {
                    declared: type_byte,
                    intact: kind as u8,
                    len: declared,
                });
            }
        }
    }
    FragmentType::from_byte(type_byte)?;
    // One pass over the payload, checking the checksum at every length.
    let mut crc = checksum::crc32c(&[type_byte]);
    for len in 0..=payload.len() {
        if len != declared && checksum::mask(crc) == stored_crc && is_boundary(len) {
            return Some(BadFragment::DamagedLength {
                declared,
                intact: len,
            });
        }
        if let Some(byte) = payload.get(len..=len) {
            crc = checksum::crc32c_append(crc, byte);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fragment(kind: FragmentType, payload: &[u8]) -> Vec<u8> {
        let mut bytes = encode_header(kind, payload).to_vec();
        bytes.extend_from_slice(payload);
        bytes
    }

    #[test]
    fn header_layout() {
        let header = encode_header(FragmentType::First, b"abc");
        assert_eq!(&header[4..], &[3, 0, 2]);
        let crc = u32::from_le_bytes(header[..4].try_into().unwrap());
        assert_eq!(checksum::unmask(crc), checksum::crc32c(b"\x02abc"));
    }

    #[test]
    fn decodes_valid_fragment() {
        let bytes = fragment(FragmentType::Last, b"hello");
        assert_eq!(
            decode_fragment(&bytes, BLOCK_SIZE),
            Ok(Fragment {
                kind: FragmentType::Last,
                len: 5
            })
        );
    }

    #[test]
    fn classifies_damage() {
        let good = fragment(FragmentType::Full, b"hello");
        assert_eq!(
            decode_fragment(&good[..5], BLOCK_SIZE),
            Err(BadFragment::TruncatedHeader)
        );
        assert_eq!(
            decode_fragment(&[0u8; 20], BLOCK_SIZE),
            Err(BadFragment::Zeroed)
        );
        assert_eq!(
            decode_fragment(&good[..9], BLOCK_SIZE),
            Err(BadFragment::TruncatedPayload(5))
        );
        assert_eq!(
            decode_fragment(&good, 10),
            Err(BadFragment::LengthPastBlock(5))
        );
        let mut bad_type = good.clone();
        bad_type[6] = 9;
        assert_eq!(
            decode_fragment(&bad_type, BLOCK_SIZE),
            Err(BadFragment::UnknownType(9))
        );
        // The type byte is under the checksum.
        let mut retyped = good.clone();
        retyped[6] = FragmentType::First as u8;
        assert_eq!(
            decode_fragment(&retyped, BLOCK_SIZE),
            Err(BadFragment::Checksum(5))
        );
        let mut flipped = good;
        flipped[9] ^= 0x10;
        assert_eq!(
            decode_fragment(&flipped, BLOCK_SIZE),
            Err(BadFragment::Checksum(5))
        );
    }
}
