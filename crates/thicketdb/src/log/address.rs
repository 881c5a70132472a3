//! Where a record lives: the log it is in and the offset of its first
//! fragment. A reading convention over the unchanged log format, stable for
//! the life of the log file.

use std::fmt;

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

#[cfg(test)]
mod tests {
    use super::*;

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
