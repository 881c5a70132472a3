//! `WriteBatch`: updates applied atomically, and their encoding, which is
//! also the payload of a log record (see `docs/format.md`):
//! `fixed64 first_sequence | fixed32 count | count × (kind u8 | key | [value])`
//! with keys and values length-prefixed by varints. A range deletion
//! (kind 2) stores its start as the key and its end as the value. An op in
//! a keyspace other than the default one sets bit 0x80 of its kind byte and
//! puts the keyspace id (varint) right after it; default-keyspace ops keep
//! the old bytes, so old logs read unchanged.

use crate::error::{Error, Result};
use crate::format::coding::{
    decode_fixed32, decode_fixed64, get_length_prefixed, get_varint64, put_length_prefixed,
    put_varint64, varint_len,
};
use crate::format::internal_key::ValueKind;

use super::keyspace_rules::DEFAULT_KEYSPACE;

/// Largest accepted user key.
pub const MAX_KEY_SIZE: usize = 64 << 10;
/// Largest accepted value.
pub const MAX_VALUE_SIZE: usize = 256 << 20;

const HEADER_LEN: usize = 12;

/// An ordered set of puts and deletes applied all or nothing.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// let db = thicketdb::Db::open(dir.path(), thicketdb::Options::default())?;
/// db.put("stale", "x")?;
/// let mut batch = thicketdb::WriteBatch::new();
/// batch.put("a", "1")?;
/// batch.put("b", "2")?;
/// batch.delete("stale")?;
/// db.write(batch)?; // all three, or none after a crash
/// assert_eq!(db.get("b")?.as_deref(), Some(&b"2"[..]));
/// assert_eq!(db.get("stale")?, None);
/// # Ok::<(), thicketdb::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: u32,
    range_deletions: u32,
    user_bytes: u64,
    /// Some op is in a keyspace other than the default one.
    other_keyspaces: bool,
    /// The open store whose keyspace handles added updates (`None`:
    /// only the handle-less methods were used, fit for any store).
    store: Option<u64>,
}

impl Default for WriteBatch {
    fn default() -> WriteBatch {
        WriteBatch::new()
    }
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatch")
            .field("count", &self.count)
            .field("bytes", &self.rep.len())
            .finish()
    }
}

/// The kind byte of a range deletion in a batch (after the point kinds
/// `ValueKind::Deletion` = 0 and `ValueKind::Value` = 1).
const RANGE_DELETION: u8 = 2;
/// Set in an op's kind byte when a keyspace id (varint) follows it.
const IN_KEYSPACE: u8 = 0x80;

/// What one update of a batch does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// A put or a delete of one key.
    Point(ValueKind),
    /// Deletes `[key, value)`: the op's key is the start, its value the end.
    RangeDeletion,
}

/// One decoded update of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchOp<'a> {
    /// The keyspace id (0: the default keyspace).
    pub keyspace: u32,
    pub kind: OpKind,
    pub key: &'a [u8],
    pub value: &'a [u8],
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch::with_capacity(0)
    }

    /// A batch whose buffer holds `bytes` of keys and values without growing.
    pub fn with_capacity(bytes: usize) -> WriteBatch {
        let mut rep = Vec::with_capacity(HEADER_LEN + 16 + bytes);
        rep.resize(HEADER_LEN, 0);
        WriteBatch {
            rep,
            count: 0,
            range_deletions: 0,
            user_bytes: 0,
            other_keyspaces: false,
            store: None,
        }
    }

    /// Adds a put; `InvalidArgument` when the key or value is too large.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_to(DEFAULT_KEYSPACE, key.as_ref(), value.as_ref())
    }

    /// Ties the batch to the open store `store` (a `Db`'s instance) for a
    /// keyspace update: keyspace ids mean nothing in another store, so one
    /// batch takes handles of one open store only.
    pub(crate) fn bind(&mut self, store: u64) -> Result<()> {
        match self.store {
            Some(bound) if bound != store => Err(Error::InvalidArgument(
                "a batch takes keyspaces of one open store; this one is of another".into(),
            )),
            _ => {
                self.store = Some(store);
                Ok(())
            }
        }
    }

    /// The open store the batch's keyspace updates are for, if any.
    pub(crate) fn store(&self) -> Option<u64> {
        self.store
    }

    /// The kind byte of an op, and the keyspace id after it when not the
    /// default keyspace.
    fn push_kind(&mut self, kind: u8, keyspace: u32) {
        if keyspace == DEFAULT_KEYSPACE {
            self.rep.push(kind);
        } else {
            self.rep.push(kind | IN_KEYSPACE);
            put_varint64(&mut self.rep, keyspace.into());
            self.other_keyspaces = true;
        }
    }

    pub(crate) fn put_to(&mut self, keyspace: u32, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(key)?;
        if value.len() > MAX_VALUE_SIZE {
            return Err(Error::InvalidArgument(format!(
                "value of {} bytes exceeds the limit of {MAX_VALUE_SIZE}",
                value.len()
            )));
        }
        self.rep
            .reserve(1 + varint_len(key.len() as u64) + key.len() + 5 + value.len());
        self.push_kind(ValueKind::Value as u8, keyspace);
        put_length_prefixed(&mut self.rep, key);
        put_length_prefixed(&mut self.rep, value);
        self.count += 1;
        self.user_bytes += (key.len() + value.len()) as u64;
        Ok(())
    }

    /// Adds a delete; `InvalidArgument` when the key is too large.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_to(DEFAULT_KEYSPACE, key.as_ref())
    }

    pub(crate) fn delete_to(&mut self, keyspace: u32, key: &[u8]) -> Result<()> {
        check_key(key)?;
        self.push_kind(ValueKind::Deletion as u8, keyspace);
        put_length_prefixed(&mut self.rep, key);
        self.count += 1;
        self.user_bytes += key.len() as u64;
        Ok(())
    }

    /// Adds a range deletion of every key in `[start, end)` (RocksDB's
    /// `DeleteRange`); an empty range (`start >= end`) deletes nothing but
    /// still counts as an update. `InvalidArgument` when a key is too
    /// large. Stores with a custom comparator refuse the batch.
    pub fn delete_range(&mut self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        self.delete_range_to(DEFAULT_KEYSPACE, start.as_ref(), end.as_ref())
    }

    pub(crate) fn delete_range_to(
        &mut self,
        keyspace: u32,
        start: &[u8],
        end: &[u8],
    ) -> Result<()> {
        check_key(start)?;
        check_key(end)?;
        self.push_kind(RANGE_DELETION, keyspace);
        put_length_prefixed(&mut self.rep, start);
        put_length_prefixed(&mut self.rep, end);
        self.count += 1;
        self.range_deletions += 1;
        self.user_bytes += (start.len() + end.len()) as u64;
        Ok(())
    }

    /// Appends a decoded update (with its keyspace) unchanged.
    pub(crate) fn push_op(&mut self, op: &BatchOp<'_>) -> Result<()> {
        match op.kind {
            OpKind::Point(ValueKind::Value) => self.put_to(op.keyspace, op.key, op.value),
            OpKind::Point(ValueKind::Deletion) => self.delete_to(op.keyspace, op.key),
            OpKind::RangeDeletion => self.delete_range_to(op.keyspace, op.key, op.value),
        }
    }

    /// Number of range deletions among the updates.
    pub(crate) fn range_deletions(&self) -> u32 {
        self.range_deletions
    }

    /// Number of updates.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Removes every update.
    pub fn clear(&mut self) {
        self.rep.truncate(HEADER_LEN);
        self.count = 0;
        self.range_deletions = 0;
        self.user_bytes = 0;
        self.other_keyspaces = false;
        self.store = None;
    }

    /// Whether every op is in the default keyspace.
    pub(crate) fn default_keyspace_only(&self) -> bool {
        !self.other_keyspaces
    }

    /// Bytes of user keys and values in the batch.
    pub fn user_bytes(&self) -> u64 {
        self.user_bytes
    }

    /// Encoded size.
    pub(crate) fn encoded_len(&self) -> usize {
        self.rep.len()
    }

    /// Appends the updates of `other` (used to merge a write group).
    pub(crate) fn append(&mut self, other: &WriteBatch) {
        self.rep.extend_from_slice(&other.rep[HEADER_LEN..]);
        self.count += other.count;
        self.range_deletions += other.range_deletions;
        self.user_bytes += other.user_bytes;
        self.other_keyspaces |= other.other_keyspaces;
        self.store = self.store.or(other.store);
    }

    /// Stamps the first sequence number and count, returning the encoding.
    pub(crate) fn encode(&mut self, first_sequence: u64) -> &[u8] {
        self.rep[..8].copy_from_slice(&first_sequence.to_le_bytes());
        self.rep[8..12].copy_from_slice(&self.count.to_le_bytes());
        &self.rep
    }
}

fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_SIZE {
        return Err(Error::InvalidArgument(format!(
            "key of {} bytes exceeds the limit of {MAX_KEY_SIZE}",
            key.len()
        )));
    }
    Ok(())
}

/// A decoded batch as read back from a log record.
pub(crate) struct DecodedBatch<'a> {
    pub first_sequence: u64,
    pub count: u32,
    body: &'a [u8],
}

impl<'a> DecodedBatch<'a> {
    /// Parses the header; the error string explains what is malformed.
    pub fn parse(rep: &'a [u8]) -> std::result::Result<DecodedBatch<'a>, String> {
        let first_sequence = decode_fixed64(rep, 0).ok_or("batch header truncated")?;
        let count = decode_fixed32(rep, 8).ok_or("batch header truncated")?;
        Ok(DecodedBatch {
            first_sequence,
            count,
            body: &rep[HEADER_LEN..],
        })
    }

    /// Decodes every update, checking the count.
    pub fn ops(&self) -> std::result::Result<Vec<BatchOp<'a>>, String> {
        let mut ops = Vec::with_capacity(self.count.min(1 << 16) as usize);
        self.for_each(|op| ops.push(op))?;
        Ok(ops)
    }

    /// Hands every update to `f` in order, then checks the count; on a
    /// malformed batch `f` may have seen a prefix of it.
    pub fn for_each(&self, mut f: impl FnMut(BatchOp<'a>)) -> std::result::Result<(), String> {
        let mut seen = 0usize;
        let mut cur = self.body;
        while let Some((&tag, rest)) = cur.split_first() {
            cur = rest;
            let keyspace = match tag & IN_KEYSPACE {
                0 => DEFAULT_KEYSPACE,
                _ => get_varint64(&mut cur)
                    .and_then(|id| u32::try_from(id).ok())
                    .ok_or("bad keyspace id")?,
            };
            let tag = tag & !IN_KEYSPACE;
            let kind = match tag {
                RANGE_DELETION => OpKind::RangeDeletion,
                _ => OpKind::Point(
                    ValueKind::from_u8(tag).ok_or_else(|| format!("bad op kind {tag}"))?,
                ),
            };
            let key = get_length_prefixed(&mut cur).ok_or("truncated key")?;
            let value = match kind {
                OpKind::Point(ValueKind::Value) => {
                    get_length_prefixed(&mut cur).ok_or("truncated value")?
                }
                OpKind::RangeDeletion => {
                    get_length_prefixed(&mut cur).ok_or("truncated range end")?
                }
                OpKind::Point(ValueKind::Deletion) => &[][..],
            };
            f(BatchOp {
                keyspace,
                kind,
                key,
                value,
            });
            seen += 1;
        }
        if seen != self.count as usize {
            return Err(format!(
                "batch count {} does not match {seen} ops",
                self.count
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        let mut b = WriteBatch::new();
        b.put(b"k1", b"v1").unwrap();
        b.delete(b"k2").unwrap();
        b.put(b"", b"").unwrap();
        let mut other = WriteBatch::new();
        other.put(b"k3", [7u8; 300]).unwrap();
        b.append(&other);
        assert_eq!(b.len(), 4);
        assert_eq!(b.user_bytes(), 2 + 2 + 2 + 2 + 300);
        let rep = b.encode(100).to_vec();
        let d = DecodedBatch::parse(&rep).unwrap();
        assert_eq!(d.first_sequence, 100);
        let ops = d.ops().unwrap();
        assert_eq!(ops.len(), 4);
        assert_eq!(ops[1].kind, OpKind::Point(ValueKind::Deletion));
        assert_eq!(ops[1].key, b"k2");
        assert_eq!(ops[3].value.len(), 300);
    }

    #[test]
    fn range_deletions_round_trip() {
        let mut b = WriteBatch::new();
        b.put(b"a", b"1").unwrap();
        b.delete_range(b"b", b"d").unwrap();
        let mut other = WriteBatch::new();
        other.delete_range(b"x", b"").unwrap();
        b.append(&other);
        assert_eq!((b.len(), b.range_deletions()), (3, 2));
        let rep = b.encode(7).to_vec();
        let ops = DecodedBatch::parse(&rep).unwrap().ops().unwrap();
        assert_eq!(
            ops[1],
            BatchOp {
                keyspace: 0,
                kind: OpKind::RangeDeletion,
                key: b"b",
                value: b"d"
            }
        );
        assert_eq!((ops[2].key, ops[2].value), (&b"x"[..], &b""[..]));
        let cut = &rep[..rep.len() - 1];
        assert!(DecodedBatch::parse(cut).unwrap().ops().is_err());
        b.clear();
        assert_eq!(b.range_deletions(), 0);
    }

    #[test]
    fn keyspace_ops_round_trip_and_default_ops_keep_their_bytes() {
        let mut b = WriteBatch::new();
        b.put(b"a", b"1").unwrap();
        let default_only = b.clone().encode(1).to_vec();
        assert_eq!(default_only[HEADER_LEN], ValueKind::Value as u8);
        b.put_to(300, b"b", b"2").unwrap();
        b.delete_to(7, b"c").unwrap();
        b.delete_range_to(7, b"d", b"e").unwrap();
        let rep = b.encode(1).to_vec();
        let ops = DecodedBatch::parse(&rep).unwrap().ops().unwrap();
        let seen: Vec<(u32, OpKind, &[u8])> =
            ops.iter().map(|o| (o.keyspace, o.kind, o.key)).collect();
        assert_eq!(
            seen,
            [
                (0, OpKind::Point(ValueKind::Value), &b"a"[..]),
                (300, OpKind::Point(ValueKind::Value), &b"b"[..]),
                (7, OpKind::Point(ValueKind::Deletion), &b"c"[..]),
                (7, OpKind::RangeDeletion, &b"d"[..]),
            ]
        );
        assert_eq!(ops[1].value, b"2");
        assert_eq!(ops[3].value, b"e");
    }

    #[test]
    fn limits_are_invalid_argument() {
        let mut b = WriteBatch::new();
        let big = vec![0u8; MAX_KEY_SIZE + 1];
        assert!(matches!(b.put(&big, b"v"), Err(Error::InvalidArgument(_))));
        assert!(matches!(b.delete(&big), Err(Error::InvalidArgument(_))));
        assert!(b.is_empty());
    }

    #[test]
    fn malformed_batches_are_errors() {
        assert!(DecodedBatch::parse(&[1, 2, 3]).is_err());
        let mut b = WriteBatch::new();
        b.put(b"k", b"v").unwrap();
        let mut rep = b.encode(1).to_vec();
        rep[8] = 2;
        assert!(DecodedBatch::parse(&rep).unwrap().ops().is_err());
        rep.truncate(rep.len() - 1);
        rep[8] = 1;
        assert!(DecodedBatch::parse(&rep).unwrap().ops().is_err());
    }
}
