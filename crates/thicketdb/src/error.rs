//! The one error type of the library.
//!
//! Errors are values: nothing in the engine panics on bad input, a corrupt
//! file or a full disk. `Error` is `Clone` so that a background failure can be
//! remembered and handed to every later caller.

use std::fmt;
use std::io;
use std::path::Path;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in ThicketDB.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// An operating-system I/O error other than a full disk.
    #[error("I/O error{}: {message}", context_suffix(.context))]
    Io {
        /// The operating system's classification.
        kind: io::ErrorKind,
        /// The operating system's message.
        message: String,
        /// What the engine was doing, with the file (may be empty).
        context: String,
    },
    /// The device is full (ENOSPC or EDQUOT).
    #[error("no space left on device{}: {message}", context_suffix(.context))]
    NoSpace {
        /// The operating system's message.
        message: String,
        /// What the engine was doing, with the file (may be empty).
        context: String,
    },
    /// Stored bytes failed a checksum or could not be decoded.
    #[error("corruption in {file} at offset {offset}: {reason}")]
    Corruption {
        /// The file holding the bad bytes.
        file: String,
        /// Where in it they start.
        offset: u64,
        /// What is wrong with them.
        reason: String,
    },
    /// The caller passed something the engine does not accept.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The engine broke one of its own invariants: a bug, not bad input.
    /// `location` is the source line that noticed, `message` what broke.
    #[error("internal invariant violated at {location}: {message}")]
    Invariant {
        /// What broke.
        message: String,
        /// The source line that noticed.
        location: String,
    },
    /// Another process (or another `Db` in this process) holds the store.
    #[error("store is locked by another process: {0}")]
    Locked(String),
    /// The store was closed, or a background error made it read-only.
    #[error("store is closed")]
    Closed,
    /// The store was opened with `Db::open_read_only`: writes, flushes and
    /// compactions are refused.
    #[error("store is open read-only: {0} refused")]
    ReadOnly(String),
    /// A background flush or compaction failed; writes are refused until reopen.
    #[error("background error, writes refused until reopen: {0}")]
    Background(Box<Error>),
}

fn context_suffix(context: &str) -> String {
    if context.is_empty() {
        String::new()
    } else {
        format!(" ({context})")
    }
}

impl Error {
    /// Builds a corruption error naming the file and the offset.
    pub fn corruption(file: impl AsRef<Path>, offset: u64, reason: impl Into<String>) -> Error {
        Error::Corruption {
            file: file.as_ref().display().to_string(),
            offset,
            reason: reason.into(),
        }
    }

    /// Builds an invariant violation located at the caller's source line.
    #[track_caller]
    pub fn invariant(message: impl Into<String>) -> Error {
        let at = std::panic::Location::caller();
        Error::Invariant {
            message: message.into(),
            location: format!("{}:{}", at.file(), at.line()),
        }
    }

    /// Wraps an `io::Error`, adding what was being done (usually a path).
    pub fn io(err: io::Error, context: impl Into<String>) -> Error {
        let context = context.into();
        if is_no_space(&err) {
            Error::NoSpace {
                message: err.to_string(),
                context,
            }
        } else {
            Error::Io {
                kind: err.kind(),
                message: err.to_string(),
                context,
            }
        }
    }

    /// True for errors that mean "stored data is damaged".
    pub fn is_corruption(&self) -> bool {
        match self {
            Error::Corruption { .. } => true,
            Error::Background(inner) => inner.is_corruption(),
            _ => false,
        }
    }

    /// True for a full device.
    pub fn is_no_space(&self) -> bool {
        match self {
            Error::NoSpace { .. } => true,
            Error::Background(inner) => inner.is_no_space(),
            _ => false,
        }
    }
}

fn is_no_space(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    ) || err.raw_os_error() == Some(28)
}

impl From<io::Error> for Error {
    fn from(err: io::Error) -> Error {
        Error::io(err, "")
    }
}

/// Display helper for byte strings in error messages and tools.
pub struct Printable<'a>(pub &'a [u8]);

impl fmt::Display for Printable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in self.0.utf8_chunks() {
            for c in chunk.valid().chars() {
                if c.is_control() {
                    write!(f, "{}", c.escape_default())?;
                } else {
                    write!(f, "{c}")?;
                }
            }
            for b in chunk.invalid() {
                write!(f, "\\x{b:02x}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enospc_maps_to_no_space() {
        let err = Error::io(io::Error::from_raw_os_error(28), "000001.log");
        assert!(err.is_no_space());
        assert!(err.to_string().contains("000001.log"));
    }

    #[test]
    fn corruption_names_file_and_offset() {
        let err = Error::corruption("000007.seg", 4096, "bad block checksum");
        assert_eq!(
            err.to_string(),
            "corruption in 000007.seg at offset 4096: bad block checksum"
        );
        assert!(err.is_corruption());
    }

    #[test]
    fn invariant_names_the_line_that_noticed() {
        let line = line!() + 1;
        let err = Error::invariant("run 7 lost its tables");
        assert_eq!(
            err.to_string(),
            format!(
                "internal invariant violated at {}:{line}: run 7 lost its tables",
                file!()
            )
        );
        assert!(!err.is_corruption());
    }

    #[test]
    fn printable_escapes_binary() {
        assert_eq!(Printable(b"ab\x00\xff").to_string(), "ab\\u{0}\\xff");
    }
}
