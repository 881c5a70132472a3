//! Reassembles records from fragments and applies the damage policy: a torn
//! tail is dropped silently; damage with a valid record start after it is
//! mid-log corruption, an error or a skip depending on the mode.

use std::path::PathBuf;

use super::blocks::{BlockReader, Event};
use super::mode::RecoveryMode;
use crate::error::{Error, Result};
use crate::io::SequentialFile;

/// Default cap on an assembled record; far above any write group or
/// MANIFEST record, low enough that a damaged log cannot exhaust memory.
pub const DEFAULT_MAX_RECORD_SIZE: usize = 512 << 20;

/// A byte range the reader dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// File offset of the first dropped byte (the start of the damaged
    /// record when the damage was inside one).
    pub offset: u64,
    pub len: u64,
    pub reason: String,
}

/// Damage seen but not yet classified as tail or mid-log.
#[derive(Debug)]
struct Damage {
    /// First byte that will be dropped.
    start: u64,
    /// Where the damage itself is (reported in errors).
    offset: u64,
    reason: String,
    /// Oversized records and damaged headers are reported even at the
    /// tail: a crash tears a record short, it never makes one too long or
    /// rewrites a header.
    reported_at_tail: bool,
}

impl Damage {
    fn new(start: u64, offset: u64, reason: impl Into<String>) -> Damage {
        Damage {
            start,
            offset,
            reason: reason.into(),
            reported_at_tail: false,
        }
    }

    /// The dropped range, from the damage to `until` (exclusive).
    fn into_skipped(self, until: u64) -> Skipped {
        Skipped {
            offset: self.start,
            len: until - self.start,
            reason: self.reason,
        }
    }
}

enum State {
    /// Between records.
    Idle,
    /// Assembling the record whose first fragment is at this offset.
    Assembling(u64),
    /// Dropping fragments until the next record start.
    Damaged(Damage),
}

/// Reads the records of a log (a WAL or a MANIFEST) in order.
pub struct LogReader {
    blocks: BlockReader,
    path: PathBuf,
    mode: RecoveryMode,
    max_record_size: usize,
    skipped: Vec<Skipped>,
    dropped_tail: Option<Skipped>,
    /// Errors are sticky: after one, the position in the file is unknown.
    failed: Option<Error>,
}

impl LogReader {
    /// Reads `file`; `path` only names it in errors.
    pub fn new(file: Box<dyn SequentialFile>, path: PathBuf, mode: RecoveryMode) -> LogReader {
        LogReader {
            blocks: BlockReader::new(file),
            path,
            mode,
            max_record_size: DEFAULT_MAX_RECORD_SIZE,
            skipped: Vec::new(),
            dropped_tail: None,
            failed: None,
        }
    }

    /// Caps the size of an assembled record; a longer one is corruption.
    pub fn with_max_record_size(mut self, max: usize) -> LogReader {
        self.max_record_size = max;
        self
    }

    /// The next record and the file offset it starts at; `None` at the end.
    pub fn read_record(&mut self) -> Result<Option<(u64, Vec<u8>)>> {
        let mut record = Vec::new();
        Ok(self
            .read_record_into(&mut record)?
            .map(|offset| (offset, record)))
    }

    /// Like [`read_record`](Self::read_record), reusing the caller's buffer.
    pub fn read_record_into(&mut self, record: &mut Vec<u8>) -> Result<Option<u64>> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        let result = self.next_record(record);
        if let Err(err) = &result {
            self.failed = Some(err.clone());
        }
        result
    }

    /// Mid-log damage skipped so far (only in `SkipAnyCorruption` mode).
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// The torn tail dropped at the end of the file, once reached.
    pub fn dropped_tail(&self) -> Option<&Skipped> {
        self.dropped_tail.as_ref()
    }

    fn next_record(&mut self, record: &mut Vec<u8>) -> Result<Option<u64>> {
        record.clear();
        let mut state = State::Idle;
        loop {
            let (offset, kind) = match self.blocks.next()? {
                Event::Fragment { offset, kind } => (offset, kind),
                Event::Bad { offset, why } => {
                    let mut damage = match state {
                        State::Idle => Damage::new(offset, offset, why.to_string()),
                        State::Assembling(start) => Damage::new(start, offset, why.to_string()),
                        // One damaged stretch, however many bad spots it has.
                        State::Damaged(damage) => damage,
                    };
                    damage.reported_at_tail |= why.is_media_damage();
                    state = State::Damaged(damage);
                    continue;
                }
                Event::Eof => {
                    self.finish(state)?;
                    return Ok(None);
                }
            };
            if kind.starts_record() {
                let damage = match state {
                    State::Idle => None,
                    State::Assembling(start) => Some(Damage::new(
                        start,
                        start,
                        format!("record has no last fragment before offset {offset}"),
                    )),
                    State::Damaged(damage) => Some(damage),
                };
                if let Some(damage) = damage {
                    self.report(damage, Some(offset))?;
                }
                record.clear();
                state = State::Assembling(offset);
            }
            let start = match state {
                State::Assembling(start) => start,
                State::Idle => {
                    state = State::Damaged(Damage::new(
                        offset,
                        offset,
                        "continuation fragment without a first fragment",
                    ));
                    continue;
                }
                State::Damaged(_) => continue,
            };
            let payload = self.blocks.payload();
            if record.len() + payload.len() > self.max_record_size {
                record.clear();
                state = State::Damaged(Damage {
                    reported_at_tail: true,
                    ..Damage::new(
                        start,
                        start,
                        format!(
                            "record exceeds the maximum record size of {} bytes",
                            self.max_record_size
                        ),
                    )
                });
                continue;
            }
            record.extend_from_slice(payload);
            if kind.ends_record() {
                return Ok(Some(start));
            }
        }
    }

    /// Reports damage that is not a torn tail: `resume` is the valid record
    /// start after it, or `None` for an oversized record at the tail.
    fn report(&mut self, damage: Damage, resume: Option<u64>) -> Result<()> {
        match self.mode {
            RecoveryMode::TolerateTailCorruption => {
                let reason = match resume {
                    Some(at) => format!("{} (valid records follow at offset {at})", damage.reason),
                    None => damage.reason,
                };
                Err(Error::corruption(&self.path, damage.offset, reason))
            }
            RecoveryMode::SkipAnyCorruption => {
                let until = resume.unwrap_or_else(|| self.blocks.offset());
                self.skipped.push(damage.into_skipped(until));
                Ok(())
            }
        }
    }

    /// Classifies what was left unfinished at the end of the file.
    fn finish(&mut self, state: State) -> Result<()> {
        let damage = match state {
            State::Idle => return Ok(()),
            State::Assembling(start) => {
                Damage::new(start, start, "record cut short by end of file")
            }
            State::Damaged(damage) => damage,
        };
        if damage.reported_at_tail {
            return self.report(damage, None);
        }
        self.dropped_tail = Some(damage.into_skipped(self.blocks.offset()));
        Ok(())
    }
}
