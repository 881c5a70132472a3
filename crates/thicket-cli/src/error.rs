//! The CLI's error type: a library error, an I/O error on our own output or
//! files, or a usage problem the argument parser cannot catch.

use std::fmt;
use std::io;

#[derive(Debug)]
pub enum CliError {
    Db(thicketdb::Error),
    Io(io::Error),
    Usage(String),
    /// Stdout was closed by its reader; not reported.
    BrokenPipe,
}

pub type CliResult<T> = Result<T, CliError>;

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Db(e) => write!(f, "{e}"),
            CliError::Io(e) => write!(f, "{e}"),
            CliError::Usage(msg) => f.write_str(msg),
            CliError::BrokenPipe => f.write_str("broken pipe"),
        }
    }
}

impl From<thicketdb::Error> for CliError {
    fn from(e: thicketdb::Error) -> CliError {
        CliError::Db(e)
    }
}

impl From<io::Error> for CliError {
    fn from(e: io::Error) -> CliError {
        if e.kind() == io::ErrorKind::BrokenPipe {
            CliError::BrokenPipe
        } else {
            CliError::Io(e)
        }
    }
}
