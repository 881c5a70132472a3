//! A log file read ahead: `RandomAccessLogReader` asks for each fragment
//! with two small reads (header, payload), which suits one record read by
//! its address but not a pass over every record of a log (a funk build, a
//! munk load, a log's first sorted view): there, these reads are served
//! from a window of the file refilled with one read of `WINDOW` bytes.

use std::sync::Arc;

use parking_lot::Mutex;

use super::format::BLOCK_SIZE;
use crate::error::Result;
use crate::io::RandomAccessFile;

/// Bytes read at once: 32 log blocks.
const WINDOW: u64 = 32 * BLOCK_SIZE as u64;

/// The window: its offset in the file and its bytes.
struct Window {
    start: u64,
    bytes: Vec<u8>,
}

pub(super) struct ReadAhead {
    file: Arc<dyn RandomAccessFile>,
    window: Mutex<Window>,
}

impl ReadAhead {
    pub fn new(file: Arc<dyn RandomAccessFile>) -> ReadAhead {
        ReadAhead {
            file,
            window: Mutex::new(Window {
                start: 0,
                bytes: Vec::new(),
            }),
        }
    }
}

impl RandomAccessFile for ReadAhead {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let Some(end) = offset.checked_add(buf.len() as u64) else {
            return self.file.read_exact_at(offset, buf);
        };
        let mut window = self.window.lock();
        let held = window.start..window.start + window.bytes.len() as u64;
        if offset < held.start || end > held.end {
            // From the block holding `offset`: the reads come in order.
            let start = offset - offset % BLOCK_SIZE as u64;
            let until = (start + WINDOW.max(end - start)).min(self.file.len()?);
            if until < end {
                // Past the end of the file: the file reports it.
                return self.file.read_exact_at(offset, buf);
            }
            window.bytes.resize((until - start) as usize, 0);
            window.start = start;
            if let Err(e) = self.file.read_exact_at(start, &mut window.bytes) {
                window.bytes.clear();
                return Err(e);
            }
        }
        let from = (offset - window.start) as usize;
        buf.copy_from_slice(&window.bytes[from..from + buf.len()]);
        Ok(())
    }

    fn len(&self) -> Result<u64> {
        self.file.len()
    }

    fn punch_hole(&self, _offset: u64, _len: u64) -> Result<bool> {
        Ok(false)
    }
}
