//! Little-endian fixed-width integers and LEB128 varints.
//!
//! Decoders take a cursor (`&mut &[u8]`) and return `None` on truncated or
//! overlong input; callers turn that into a `Corruption` error with the file
//! and offset they know.

/// Appends a varint-encoded u32.
pub fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, u64::from(v));
}

/// Appends a varint-encoded u64.
pub fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Appends a varint length followed by the bytes.
pub fn put_length_prefixed(dst: &mut Vec<u8>, bytes: &[u8]) {
    put_varint64(dst, bytes.len() as u64);
    dst.extend_from_slice(bytes);
}

pub fn put_fixed32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

pub fn put_fixed64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Number of bytes `put_varint64(v)` writes.
pub fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Decodes a varint u64, advancing `src`.
pub fn get_varint64(src: &mut &[u8]) -> Option<u64> {
    let mut result: u64 = 0;
    for (i, &byte) in src.iter().enumerate().take(10) {
        let shift = 7 * i as u32;
        if i == 9 && byte > 1 {
            return None;
        }
        result |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            *src = &src[i + 1..];
            return Some(result);
        }
    }
    None
}

/// Decodes a varint that must fit in u32.
pub fn get_varint32(src: &mut &[u8]) -> Option<u32> {
    let v = get_varint64(src)?;
    u32::try_from(v).ok()
}

/// Decodes a varint length and returns that many bytes.
pub fn get_length_prefixed<'a>(src: &mut &'a [u8]) -> Option<&'a [u8]> {
    let len = usize::try_from(get_varint64(src)?).ok()?;
    if src.len() < len {
        return None;
    }
    let (head, tail) = src.split_at(len);
    *src = tail;
    Some(head)
}

pub fn get_fixed32(src: &mut &[u8]) -> Option<u32> {
    let (head, tail) = src.split_first_chunk::<4>()?;
    *src = tail;
    Some(u32::from_le_bytes(*head))
}

pub fn get_fixed64(src: &mut &[u8]) -> Option<u64> {
    let (head, tail) = src.split_first_chunk::<8>()?;
    *src = tail;
    Some(u64::from_le_bytes(*head))
}

/// Reads a fixed u32 at `pos` without a cursor.
pub fn decode_fixed32(src: &[u8], pos: usize) -> Option<u32> {
    let bytes = src.get(pos..pos.checked_add(4)?)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

/// Reads a fixed u64 at `pos` without a cursor.
pub fn decode_fixed64(src: &[u8], pos: usize) -> Option<u64> {
    let bytes = src.get(pos..pos.checked_add(8)?)?;
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn varint64_round_trip(v in any::<u64>()) {
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            prop_assert_eq!(buf.len(), varint_len(v));
            let mut cur = &buf[..];
            prop_assert_eq!(get_varint64(&mut cur), Some(v));
            prop_assert!(cur.is_empty());
        }

        #[test]
        fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..24)) {
            let mut cur = &bytes[..];
            let _ = get_varint64(&mut cur);
            let mut cur = &bytes[..];
            let _ = get_length_prefixed(&mut cur);
            let mut cur = &bytes[..];
            let _ = get_fixed64(&mut cur);
        }
    }

    #[test]
    fn truncated_varint_is_none() {
        let mut cur: &[u8] = &[0x80, 0x80];
        assert_eq!(get_varint64(&mut cur), None);
    }

    #[test]
    fn overlong_varint_is_none() {
        let mut cur: &[u8] = &[0xff; 11];
        assert_eq!(get_varint64(&mut cur), None);
    }

    #[test]
    fn varint32_rejects_large() {
        let mut buf = Vec::new();
        put_varint64(&mut buf, u64::from(u32::MAX) + 1);
        assert_eq!(get_varint32(&mut &buf[..]), None);
    }

    #[test]
    fn length_prefixed_round_trip() {
        let mut buf = Vec::new();
        put_length_prefixed(&mut buf, b"abc");
        put_fixed32(&mut buf, 7);
        let mut cur = &buf[..];
        assert_eq!(get_length_prefixed(&mut cur), Some(&b"abc"[..]));
        assert_eq!(get_fixed32(&mut cur), Some(7));
    }
}
