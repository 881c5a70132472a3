//! A compaction's read-ahead over one table: blocks come from spans of the
//! table read at once, never past its end (RocksDB's
//! `compaction_readahead_size`). The file is a descriptor of the
//! compaction's own, opened without kernel read-ahead, so the device reads
//! exactly the spans asked for.

use std::sync::Arc;

use crate::error::Result;
use crate::io::RandomAccessFile;

pub struct Readahead {
    file: Arc<dyn RandomAccessFile>,
    /// Bytes read at once.
    span: u64,
    /// Absolute offset of `buf[0]` in the file.
    start: u64,
    buf: Vec<u8>,
}

impl Readahead {
    pub fn new(file: Arc<dyn RandomAccessFile>, span: u64) -> Readahead {
        Readahead {
            file,
            span,
            start: 0,
            buf: Vec::new(),
        }
    }

    /// Fills `out` with the file's bytes at `offset`; when the span held
    /// does not cover them, reads the next span from `offset` on, of up to
    /// `span` bytes but not past `end` (the table's last block byte).
    pub fn read(&mut self, offset: u64, out: &mut [u8], end: u64) -> Result<()> {
        let len = out.len() as u64;
        let held_end = self.start + self.buf.len() as u64;
        if offset < self.start || offset + len > held_end {
            let span = self.span.min(end.saturating_sub(offset)).max(len);
            self.buf.resize(span as usize, 0);
            self.file.read_exact_at(offset, &mut self.buf)?;
            self.start = offset;
        }
        let from = (offset - self.start) as usize;
        out.copy_from_slice(&self.buf[from..from + out.len()]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::testutil::MemFile;
    use crate::io::WritableFile;

    /// A file that counts its reads.
    struct Counted {
        inner: MemFile,
        reads: std::sync::atomic::AtomicUsize,
    }

    impl RandomAccessFile for Counted {
        fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
            self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.inner.read_exact_at(offset, buf)
        }
        fn len(&self) -> Result<u64> {
            RandomAccessFile::len(&self.inner)
        }
        fn punch_hole(&self, offset: u64, len: u64) -> Result<bool> {
            self.inner.punch_hole(offset, len)
        }
    }

    #[test]
    fn spans_serve_the_blocks_inside_them_and_never_pass_the_end() {
        let mut inner = MemFile::default();
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        inner.append(&data).unwrap();
        let file = Arc::new(Counted {
            inner,
            reads: Default::default(),
        });
        let mut ahead = Readahead::new(file.clone(), 4096);
        let mut out = vec![0u8; 1000];
        // Blocks 1000..5000 of a table ending at 6000: two spans, the
        // second cut at the end.
        for at in (1000..5000).step_by(1000) {
            ahead.read(at, &mut out, 6000).unwrap();
            assert_eq!(out, data[at as usize..at as usize + 1000]);
        }
        ahead.read(5000, &mut out, 6000).unwrap();
        assert_eq!(out, data[5000..6000]);
        assert_eq!(file.reads.load(std::sync::atomic::Ordering::Relaxed), 2);
        assert_eq!(ahead.buf.len(), 1000, "the second span stops at the end");
        // A block bigger than the span is read whole; going back rereads.
        let mut big = vec![0u8; 5000];
        ahead.read(0, &mut big, 9000).unwrap();
        assert_eq!(big, data[..5000]);
        assert_eq!(file.reads.load(std::sync::atomic::Ordering::Relaxed), 3);
    }
}
