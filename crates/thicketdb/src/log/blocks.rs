//! The physical half of log reading: walks a file block by block and yields
//! fragments, damaged spots, and the end of the file. After damage it
//! resynchronises on the next position that holds a valid fragment, so the
//! record layer can tell a torn tail from damage with intact records after it.

use std::ops::Range;

use super::format::{
    decode_fragment, diagnose_header, BadFragment, Fragment, FragmentType, BLOCK_SIZE, HEADER_SIZE,
};
use crate::error::Result;
use crate::io::SequentialFile;

/// One step of the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A checksummed fragment whose header starts at `offset`; its payload
    /// is [`BlockReader::payload`] until the next call.
    Fragment { offset: u64, kind: FragmentType },
    /// The bytes at `offset` are not a fragment. The next event comes from
    /// the next valid fragment or the end of the file.
    Bad { offset: u64, why: BadFragment },
    /// The end of the file (returned again on every later call).
    Eof,
}

/// Where to resume after damage.
#[derive(Debug, Clone, Copy)]
struct Resync {
    bad_pos: usize,
    /// Position after the damaged fragment according to its length field.
    declared_end: Option<usize>,
}

/// Reads fragments; memory is one block.
pub struct BlockReader {
    file: Box<dyn SequentialFile>,
    block: Box<[u8]>,
    /// Bytes of `block` holding data; less than `BLOCK_SIZE` only in the
    /// last block of the file.
    len: usize,
    /// File offset of `block[0]`.
    block_start: u64,
    pos: usize,
    /// The file returned end-of-file; `block` is its last block.
    at_eof: bool,
    payload: Range<usize>,
    resync: Option<Resync>,
}

impl BlockReader {
    pub fn new(file: Box<dyn SequentialFile>) -> BlockReader {
        BlockReader {
            file,
            block: vec![0u8; BLOCK_SIZE].into_boxed_slice(),
            len: 0,
            block_start: 0,
            pos: 0,
            at_eof: false,
            payload: 0..0,
            resync: None,
        }
    }

    /// Payload of the fragment last returned.
    pub fn payload(&self) -> &[u8] {
        &self.block[self.payload.clone()]
    }

    /// File offset of the next unread byte (the file length once at `Eof`).
    pub fn offset(&self) -> u64 {
        self.block_start + self.pos as u64
    }

    pub fn next(&mut self) -> Result<Event> {
        if let Some(resync) = self.resync.take() {
            self.pos = self.resume_position(resync);
        }
        loop {
            if self.len - self.pos < HEADER_SIZE {
                if !self.at_eof {
                    // The rest of a full block is the zero trailer.
                    self.load_next_block()?;
                    continue;
                }
                if self.pos == self.len {
                    return Ok(Event::Eof);
                }
                let offset = self.offset();
                self.pos = self.len;
                return Ok(Event::Bad {
                    offset,
                    why: BadFragment::TruncatedHeader,
                });
            }
            let offset = self.offset();
            return Ok(match self.decode_at(self.pos) {
                Ok(fragment) => {
                    let start = self.pos + HEADER_SIZE;
                    self.payload = start..start + fragment.len;
                    self.pos = self.payload.end;
                    Event::Fragment {
                        offset,
                        kind: fragment.kind,
                    }
                }
                Err(why) => {
                    let why = diagnose_header(&self.block[self.pos..self.len], BLOCK_SIZE - self.pos)
                        .unwrap_or(why);
                    self.resync = Some(Resync {
                        bad_pos: self.pos,
                        declared_end: why.declared_len().map(|len| self.pos + HEADER_SIZE + len),
                    });
                    Event::Bad { offset, why }
                }
            });
        }
    }

    fn decode_at(&self, pos: usize) -> Result<Fragment, BadFragment> {
        decode_fragment(&self.block[pos..self.len], BLOCK_SIZE - pos)
    }

    /// The first position after damage worth parsing: the end the damaged
    /// header declares when that is consistent with what follows, else the
    /// first valid fragment in the rest of the block, else the block's end
    /// (the next block starts with a header whatever happened here).
    fn resume_position(&self, resync: Resync) -> usize {
        if let Some(end) = resync.declared_end {
            // A length that reaches the end of the block's data (or, in the
            // last block, past the end of the file) is consistent: do not
            // search the payload, which is user data and may itself contain
            // bytes that look like log fragments.
            if end + HEADER_SIZE > self.len || self.decode_at(end).is_ok() {
                return end.min(self.len);
            }
        }
        (resync.bad_pos + 1..self.len)
            .find(|&pos| self.decode_at(pos).is_ok())
            .unwrap_or(self.len)
    }

    fn load_next_block(&mut self) -> Result<()> {
        self.block_start += self.len as u64;
        self.pos = 0;
        self.len = 0;
        while self.len < BLOCK_SIZE {
            let n = self.file.read(&mut self.block[self.len..])?;
            if n == 0 {
                self.at_eof = true;
                break;
            }
            self.len += n;
        }
        Ok(())
    }
}
