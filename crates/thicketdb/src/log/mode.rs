//! How a log reader treats damage it finds.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// What to do with damaged records. Either way a torn tail (what a crash in
/// the middle of a write leaves: damage with no valid record after it) is
/// dropped silently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecoveryMode {
    /// Damage followed by valid records is an `Error::Corruption` ("strict").
    #[default]
    TolerateTailCorruption,
    /// Damage anywhere is skipped and listed in `LogReader::skipped`
    /// ("skip"): for salvaging what is left of a damaged store.
    SkipAnyCorruption,
}

impl RecoveryMode {
    /// Every mode, in the order the option's help lists them.
    pub const ALL: &'static [RecoveryMode] = &[
        RecoveryMode::TolerateTailCorruption,
        RecoveryMode::SkipAnyCorruption,
    ];

    /// The textual form used in options.
    pub fn name(self) -> &'static str {
        match self {
            RecoveryMode::TolerateTailCorruption => "strict",
            RecoveryMode::SkipAnyCorruption => "skip",
        }
    }
}

impl fmt::Display for RecoveryMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for RecoveryMode {
    type Err = Error;

    fn from_str(s: &str) -> Result<RecoveryMode, Error> {
        RecoveryMode::ALL
            .iter()
            .copied()
            .find(|mode| mode.name() == s)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("unknown recovery mode {s:?} (known: strict, skip)"))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for &mode in RecoveryMode::ALL {
            assert_eq!(mode.to_string().parse::<RecoveryMode>(), Ok(mode));
        }
        assert_eq!(RecoveryMode::default().name(), "strict");
        assert!("lenient".parse::<RecoveryMode>().is_err());
    }
}
