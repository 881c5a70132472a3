//! Incarnations (YoDB §3.5): the high `incarnation_bits` of a sequence
//! number count the recoveries from an asynchronous-mode crash, the rest
//! count writes within one incarnation. The recovery table (`RECOVERY`)
//! maps each past incarnation to its last checkpointed sequence number: a
//! log record of an old incarnation above it was written after the last
//! checkpoint before that crash, and every read of a chunk log ignores it
//! (`chunk_log.rs` leaves it out of the log's index), so the store holds a
//! prefix of the writes without reading the logs at open. Funk tables
//! may hold writes past a checkpoint (`rebalance.rs`): their reads leave
//! them out the same way (`table_filter.rs`).
//!
//! Format (`docs/format.md`, *Recovery table*): `magic "TKRECOVR" |
//! fixed32 version (1) | fixed32 body length | body | fixed32 masked
//! crc32c(body)`, body: `varint32 incarnation_bits | varint32 n |
//! n × varint64 last checkpointed sequence` (row `i` for incarnation `i`;
//! `n` is the current incarnation).

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::coding::{get_varint32, get_varint64, put_varint32, put_varint64};
use crate::format::internal_key::MAX_SEQUENCE;
use crate::io::FileSystem;

const MAGIC: &[u8; 8] = b"TKRECOVR";
/// Version 2: funk tables may hold writes the table ignores (version 1's
/// tables held checkpointed writes only, and its readers read them
/// unchecked: a store a crash left is rewritten as version 2 before a
/// table takes such a write, so that a reader of version 1 refuses it).
const VERSION: u32 = 2;

/// The file's name.
const NAME: &str = "RECOVERY";

/// The recovery table and the sequence layout it implies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incarnations {
    /// High bits of a sequence number that hold the incarnation.
    bits: u32,
    /// Per past incarnation, its last checkpointed sequence number.
    rows: Vec<u64>,
}

impl Incarnations {
    /// A new store's: incarnation 0, no past one.
    pub fn new(bits: u32) -> Incarnations {
        Incarnations {
            bits,
            rows: Vec::new(),
        }
    }

    /// The current incarnation.
    pub fn current(&self) -> u32 {
        self.rows.len() as u32
    }

    /// Bits of the per-incarnation counter.
    fn counter_bits(&self) -> u32 {
        (MAX_SEQUENCE + 1).trailing_zeros() - self.bits
    }

    /// The sequence number the current incarnation counts from (its
    /// writes take the numbers after it).
    pub fn base(&self) -> u64 {
        u64::from(self.current()) << self.counter_bits()
    }

    /// Whether the write numbered `sequence` is to be ignored: an old
    /// incarnation's, past that incarnation's last checkpoint.
    pub fn ignores(&self, sequence: u64) -> bool {
        let incarnation = sequence >> self.counter_bits();
        usize::try_from(incarnation)
            .ok()
            .and_then(|i| self.rows.get(i))
            .is_some_and(|&last| sequence > last)
    }

    /// Whether some write may be ignored (a past incarnation exists).
    pub fn ignores_any(&self) -> bool {
        !self.rows.is_empty()
    }

    /// Whether a recovery may start another incarnation (else it drops the
    /// writes past the checkpoint from the logs instead).
    pub fn can_advance(&self) -> bool {
        u64::from(self.current()) + 1 < 1u64 << self.bits
    }

    /// The table after a recovery from the current incarnation, whose
    /// last checkpoint was `checkpointed`: the next incarnation.
    pub fn advanced(&self, checkpointed: u64) -> Incarnations {
        let mut next = self.clone();
        next.rows.push(checkpointed);
        next
    }

    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::new();
        put_varint32(&mut body, self.bits);
        put_varint32(&mut body, self.rows.len() as u32);
        for &row in &self.rows {
            put_varint64(&mut body, row);
        }
        super::framed::encode(MAGIC, VERSION, &body)
    }

    /// Parses the file; errors name `file` and the offset of the damage.
    pub fn decode(file: &Path, data: &[u8]) -> Result<Incarnations> {
        let bad = |offset: usize, why: &str| Error::corruption(file, offset as u64, why);
        let (_, body) = super::framed::decode(file, data, MAGIC, "recovery table", &[1, VERSION])?;
        let len = body.len();
        let mut cur = body;
        let at = |cur: &[u8]| super::framed::HEADER + len - cur.len();
        let bits = get_varint32(&mut cur).ok_or_else(|| bad(at(cur), "truncated bits"))?;
        if !(1..=8).contains(&bits) {
            return Err(bad(super::framed::HEADER, "incarnation bits not in 1..=8"));
        }
        let count = get_varint32(&mut cur).ok_or_else(|| bad(at(cur), "truncated row count"))?;
        if u64::from(count) >= 1u64 << bits {
            return Err(bad(at(cur), "more rows than incarnations"));
        }
        let mut rows = Vec::with_capacity(count as usize);
        for _ in 0..count {
            rows.push(get_varint64(&mut cur).ok_or_else(|| bad(at(cur), "truncated row"))?);
        }
        if !cur.is_empty() {
            return Err(bad(at(cur), "bytes after the last row"));
        }
        Ok(Incarnations { bits, rows })
    }

    /// The table in `dir`, if the store has one.
    pub fn read(fs: &dyn FileSystem, dir: &Path) -> Result<Option<Incarnations>> {
        super::framed::read_file(fs, dir, NAME)?
            .map(|(path, data)| Incarnations::decode(&path, &data))
            .transpose()
    }

    /// Whether the table in `dir` is of the current version (`false`: an
    /// older one, or none).
    pub fn stored_is_current(fs: &dyn FileSystem, dir: &Path) -> Result<bool> {
        Ok(super::framed::read_file(fs, dir, NAME)?
            .is_some_and(|(_, data)| data.get(8..12) == Some(&VERSION.to_le_bytes()[..])))
    }

    /// Writes the table in `dir` durably and atomically.
    pub fn write(&self, fs: &dyn FileSystem, dir: &Path) -> Result<()> {
        super::framed::write_file(fs, dir, NAME, &self.encode())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_old_incarnation_past_its_checkpoint_is_ignored() {
        let first = Incarnations::new(4);
        assert_eq!(first.base(), 0);
        assert!(!first.ignores(1375));
        let second = first.advanced(1375);
        assert_eq!(second.current(), 1);
        assert_eq!(second.base(), 1 << 52);
        assert!(!second.ignores(1375));
        assert!(second.ignores(1376));
        assert!(second.ignores((1 << 52) - 1));
        // The current incarnation's writes count.
        assert!(!second.ignores((1 << 52) + 5));
        let third = second.advanced((1 << 52) + 956);
        assert!(third.ignores((1 << 52) + 957));
        assert!(!third.ignores((1 << 52) + 956));
        assert!(!third.ignores(1000));
    }

    #[test]
    fn a_small_budget_runs_out_of_incarnations() {
        let mut table = Incarnations::new(1);
        assert!(table.can_advance());
        table = table.advanced(10);
        assert!(!table.can_advance());
        assert_eq!(table.base(), 1 << 55);
    }

    #[test]
    fn round_trips_and_damage_names_the_file() {
        let table = Incarnations::new(3).advanced(7).advanced((1 << 53) + 2);
        let bytes = table.encode();
        assert_eq!(
            Incarnations::decode(Path::new("RECOVERY"), &bytes).unwrap(),
            table
        );
        let mut damaged = bytes.clone();
        damaged[17] ^= 1;
        let err = Incarnations::decode(Path::new("RECOVERY"), &damaged).unwrap_err();
        assert!(err.to_string().contains("RECOVERY"), "{err}");
        // More rows than the bits allow.
        let mut full = Incarnations::new(1);
        full.rows = vec![1, 2];
        assert!(Incarnations::decode(Path::new("RECOVERY"), &full.encode()).is_err());
    }
}
