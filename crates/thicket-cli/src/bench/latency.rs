//! Which operations of the measured phase are timed (`--latency`): every
//! one, one in N, or none. Timing costs two clock reads and a histogram
//! update per operation, the same for every engine; `off` leaves the
//! operation path without them, so throughput is measured alone.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LatencyMode {
    /// Every operation (`on`, the default).
    #[default]
    All,
    /// None: throughput only (`off`).
    Off,
    /// One operation in N, N ≥ 2 (`1/N`).
    OneIn(u64),
}

impl fmt::Display for LatencyMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LatencyMode::All => f.write_str("on"),
            LatencyMode::Off => f.write_str("off"),
            LatencyMode::OneIn(n) => write!(f, "1/{n}"),
        }
    }
}

impl FromStr for LatencyMode {
    type Err = String;
    fn from_str(s: &str) -> Result<LatencyMode, String> {
        let bad = || format!("--latency takes on, off or 1/N (N ≥ 1), not {s:?}");
        match s {
            "on" => Ok(LatencyMode::All),
            "off" => Ok(LatencyMode::Off),
            _ => {
                let n: u64 = s
                    .strip_prefix("1/")
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(bad)?;
                match n {
                    0 => Err(bad()),
                    1 => Ok(LatencyMode::All),
                    n => Ok(LatencyMode::OneIn(n)),
                }
            }
        }
    }
}

/// One thread's choice of the operations to time: a countdown, so an
/// untimed operation costs a decrement and a branch, no clock read.
#[derive(Debug, Clone)]
pub struct Sampler {
    /// Time every `every`-th operation; 0: none.
    every: u64,
    left: u64,
}

impl Sampler {
    pub fn new(mode: LatencyMode) -> Sampler {
        let every = match mode {
            LatencyMode::All => 1,
            LatencyMode::Off => 0,
            LatencyMode::OneIn(n) => n,
        };
        Sampler { every, left: every }
    }

    /// Whether to time the next operation.
    #[inline]
    pub fn time_next(&mut self) -> bool {
        if self.every == 0 {
            return false;
        }
        self.left -= 1;
        if self.left == 0 {
            self.left = self.every;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(mode: LatencyMode, ops: usize) -> usize {
        let mut s = Sampler::new(mode);
        (0..ops).filter(|_| s.time_next()).count()
    }

    #[test]
    fn modes_parse_and_print() {
        for (text, mode) in [
            ("on", LatencyMode::All),
            ("off", LatencyMode::Off),
            ("1/100", LatencyMode::OneIn(100)),
        ] {
            assert_eq!(text.parse::<LatencyMode>().unwrap(), mode);
            assert_eq!(mode.to_string(), text);
        }
        assert_eq!("1/1".parse::<LatencyMode>().unwrap(), LatencyMode::All);
        for bad in ["", "1/0", "1/x", "100", "all"] {
            assert!(bad.parse::<LatencyMode>().is_err(), "{bad}");
        }
    }

    #[test]
    fn samplers_time_the_share_asked_for() {
        assert_eq!(timed(LatencyMode::All, 1000), 1000);
        assert_eq!(timed(LatencyMode::Off, 1000), 0);
        assert_eq!(timed(LatencyMode::OneIn(100), 1000), 10);
        assert_eq!(timed(LatencyMode::OneIn(3), 10), 3);
    }
}
