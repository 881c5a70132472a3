//! Where a record lives: the log it is in and the offset of its first
//! fragment. A reading convention over the unchanged log format, stable for
//! the life of the log file.

use std::fmt;

use crate::format::coding::{get_varint64, put_varint64};

/// The address of a log record. Ordered by log, then by position in the
/// log: the order records were appended in, given that log numbers grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LogAddress {
    /// The number of the log file (`NNNNNN.log`) holding the record.
    pub log_number: u64,
    /// File offset of the header of the record's first (FULL or FIRST)
    /// fragment, as returned by [`LogWriter::add_record`](super::LogWriter::add_record).
    pub offset: u64,
}

impl LogAddress {
    pub fn new(log_number: u64, offset: u64) -> LogAddress {
        LogAddress { log_number, offset }
    }
}

impl fmt::Display for LogAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "log {:06} offset {}", self.log_number, self.offset)
    }
}

/// Where one value lives: `len` bytes at logical `offset` of the payload
/// of the record at `record` (TRIAD-LOG: the value of a log table's entry).
/// Encoded as four varints: log number, record offset, offset in the
/// record, length (`docs/format.md`, Log tables).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueAddress {
    pub record: LogAddress,
    /// Offset of the value's first byte in the record's payload (the
    /// record's fragments joined).
    pub offset: u64,
    pub len: u64,
}

impl ValueAddress {
    /// Appends the encoding to `out`.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        for v in [
            self.record.log_number,
            self.record.offset,
            self.offset,
            self.len,
        ] {
            put_varint64(out, v);
        }
    }

    /// Decodes a whole encoded address; the error says what is malformed.
    pub fn decode(mut src: &[u8]) -> Result<ValueAddress, &'static str> {
        let mut next = || get_varint64(&mut src).ok_or("log value address truncated");
        let address = ValueAddress {
            record: LogAddress::new(next()?, next()?),
            offset: next()?,
            len: next()?,
        };
        if !src.is_empty() {
            return Err("log value address has trailing bytes");
        }
        if address.offset.checked_add(address.len).is_none() {
            return Err("log value address overflows");
        }
        Ok(address)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_addresses_round_trip_and_reject_damage() {
        let a = ValueAddress {
            record: LogAddress::new(7, 32_761),
            offset: 40,
            len: 300 << 20,
        };
        let mut enc = Vec::new();
        a.encode_to(&mut enc);
        assert_eq!(ValueAddress::decode(&enc), Ok(a));
        assert!(ValueAddress::decode(&enc[..enc.len() - 1]).is_err());
        enc.push(0);
        assert!(ValueAddress::decode(&enc).is_err());
        let mut overflow = Vec::new();
        for v in [1, 0, u64::MAX, 1] {
            put_varint64(&mut overflow, v);
        }
        assert!(ValueAddress::decode(&overflow).is_err());
    }

    #[test]
    fn orders_by_log_then_offset() {
        let mut addresses = vec![
            LogAddress::new(2, 0),
            LogAddress::new(1, 40_000),
            LogAddress::new(1, 7),
        ];
        addresses.sort();
        assert_eq!(
            addresses,
            [
                LogAddress::new(1, 7),
                LogAddress::new(1, 40_000),
                LogAddress::new(2, 0)
            ]
        );
        assert_eq!(LogAddress::new(9, 123).to_string(), "log 000009 offset 123");
    }
}
