//! Internal keys: a user key followed by an 8-byte trailer
//! `(sequence << 8) | kind`, little endian.
//!
//! Internal keys order by user key ascending, then by trailer descending, so
//! the newest version of a user key comes first and a seek to
//! `(key, snapshot_seq, ValueKind::SEEK)` lands on the newest version visible
//! to that snapshot.

/// Largest sequence number (56 bits).
pub const MAX_SEQUENCE: u64 = (1 << 56) - 1;

/// Length of the trailer appended to every user key.
pub const TRAILER_LEN: usize = 8;

/// What an entry records about its user key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ValueKind {
    Deletion = 0,
    Value = 1,
}

impl ValueKind {
    /// The kind used in seek keys: the largest, so that a seek key sorts
    /// before every entry of the same user key and sequence.
    pub const SEEK: ValueKind = ValueKind::Value;

    pub fn from_u8(v: u8) -> Option<ValueKind> {
        match v {
            0 => Some(ValueKind::Deletion),
            1 => Some(ValueKind::Value),
            _ => None,
        }
    }
}

/// Packs a sequence number and a kind into a trailer.
pub fn pack_trailer(seq: u64, kind: ValueKind) -> u64 {
    debug_assert!(seq <= MAX_SEQUENCE);
    (seq << 8) | kind as u64
}

/// Appends the internal key for `(user_key, seq, kind)` to `dst`.
pub fn append_internal_key(dst: &mut Vec<u8>, user_key: &[u8], seq: u64, kind: ValueKind) {
    dst.extend_from_slice(user_key);
    dst.extend_from_slice(&pack_trailer(seq, kind).to_le_bytes());
}

/// An owned, encoded internal key.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct InternalKey(Vec<u8>);

impl InternalKey {
    pub fn new(user_key: &[u8], seq: u64, kind: ValueKind) -> InternalKey {
        let mut v = Vec::with_capacity(user_key.len() + TRAILER_LEN);
        append_internal_key(&mut v, user_key, seq, kind);
        InternalKey(v)
    }

    /// Wraps already-encoded bytes; `None` when they are too short to hold a
    /// trailer or carry an unknown kind.
    pub fn decode(encoded: &[u8]) -> Option<InternalKey> {
        ParsedKey::parse(encoded)?;
        Some(InternalKey(encoded.to_vec()))
    }

    pub fn encoded(&self) -> &[u8] {
        &self.0
    }

    pub fn user_key(&self) -> &[u8] {
        user_key(&self.0)
    }

    pub fn sequence(&self) -> u64 {
        trailer(&self.0) >> 8
    }

    pub fn into_vec(self) -> Vec<u8> {
        self.0
    }
}

impl std::fmt::Debug for InternalKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match ParsedKey::parse(&self.0) {
            Some(p) => write!(
                f,
                "{}@{}:{:?}",
                crate::error::Printable(p.user_key),
                p.sequence,
                p.kind
            ),
            None => write!(f, "<bad key {:?}>", self.0),
        }
    }
}

/// A decoded view of an encoded internal key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    pub user_key: &'a [u8],
    pub sequence: u64,
    pub kind: ValueKind,
}

impl<'a> ParsedKey<'a> {
    pub fn parse(encoded: &'a [u8]) -> Option<ParsedKey<'a>> {
        if encoded.len() < TRAILER_LEN {
            return None;
        }
        let t = trailer(encoded);
        Some(ParsedKey {
            user_key: user_key(encoded),
            sequence: t >> 8,
            kind: ValueKind::from_u8(t as u8)?,
        })
    }
}

/// The user-key part of an encoded internal key (which must be at least
/// `TRAILER_LEN` long; shorter input yields an empty key).
#[inline]
pub fn user_key(encoded: &[u8]) -> &[u8] {
    &encoded[..encoded.len().saturating_sub(TRAILER_LEN)]
}

/// The trailer of an encoded internal key (0 when too short).
#[inline]
pub fn trailer(encoded: &[u8]) -> u64 {
    if encoded.len() < TRAILER_LEN {
        return 0;
    }
    let mut t = [0u8; 8];
    t.copy_from_slice(&encoded[encoded.len() - TRAILER_LEN..]);
    u64::from_le_bytes(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::format::KeyOrder;

    fn lt(a: &InternalKey, b: &InternalKey) -> bool {
        KeyOrder::Bytewise
            .internal(a.encoded(), b.encoded())
            .is_lt()
    }

    #[test]
    fn newer_sorts_first() {
        let old = InternalKey::new(b"k", 5, ValueKind::Value);
        let new = InternalKey::new(b"k", 9, ValueKind::Deletion);
        assert!(lt(&new, &old));
        assert!(lt(&InternalKey::new(b"j", 1, ValueKind::Value), &new));
    }

    #[test]
    fn seek_key_precedes_same_sequence() {
        let entry = InternalKey::new(b"k", 7, ValueKind::Deletion);
        let seek = InternalKey::new(b"k", 7, ValueKind::SEEK);
        assert!(!lt(&entry, &seek));
    }

    #[test]
    fn parse_round_trip() {
        let k = InternalKey::new(b"hello", 42, ValueKind::Deletion);
        let p = ParsedKey::parse(k.encoded()).unwrap();
        assert_eq!(p.user_key, b"hello");
        assert_eq!(p.sequence, 42);
        assert_eq!(p.kind, ValueKind::Deletion);
    }

    #[test]
    fn parse_rejects_short_and_bad_kind() {
        assert!(ParsedKey::parse(b"short").is_none());
        let mut bad = b"k".to_vec();
        bad.extend_from_slice(&((3u64 << 8) | 9).to_le_bytes());
        assert!(ParsedKey::parse(&bad).is_none());
    }
}
