//! A cursor over disjoint parts in key order (a run's tables, a chunked
//! store's chunks), read one after another, each opened only when the
//! cursor reaches it.

use crate::error::{Error, Result};
use crate::iterator::{EntryLocation, InternalIterator};

/// The parts a [`ConcatIterator`] reads.
pub trait Parts: Send {
    /// The cursor over one part.
    type Cursor: InternalIterator;
    /// How many parts there are.
    fn count(&self) -> usize;
    /// The part where a seek to the internal key `target` starts.
    fn part_of(&self, target: &[u8]) -> usize;
    /// A cursor over part `index` (unpositioned).
    fn open(&self, index: usize) -> Result<Self::Cursor>;
}

pub struct ConcatIterator<P: Parts> {
    parts: P,
    /// Index of the part `inner` iterates.
    index: usize,
    inner: Option<P::Cursor>,
    error: Option<Error>,
}

impl<P: Parts> ConcatIterator<P> {
    pub fn over(parts: P) -> ConcatIterator<P> {
        ConcatIterator {
            parts,
            index: 0,
            inner: None,
            error: None,
        }
    }

    fn open(&mut self, index: usize) -> bool {
        self.inner = None;
        self.index = index;
        if index >= self.parts.count() || self.error.is_some() {
            return false;
        }
        match self.parts.open(index) {
            Ok(inner) => {
                self.inner = Some(inner);
                true
            }
            Err(e) => {
                self.error = Some(e);
                false
            }
        }
    }

    fn inner_valid(&self) -> bool {
        self.inner.as_ref().is_some_and(|i| i.valid())
    }

    /// Moves the current part's error, if any, into `self.error`.
    fn inner_failed(&mut self) -> bool {
        match self.inner.as_ref().map(|i| i.status()) {
            Some(Err(e)) => {
                self.error = Some(e);
                self.inner = None;
                true
            }
            _ => false,
        }
    }

    /// After the current part ran out, moves forward to the next part
    /// with entries (or stops on an error).
    fn skip_forward(&mut self) {
        while !self.inner_valid() {
            if self.inner_failed() || !self.open(self.index + 1) {
                return;
            }
            if let Some(inner) = &mut self.inner {
                inner.seek_to_first();
            }
        }
    }

    fn skip_backward(&mut self) {
        while !self.inner_valid() {
            if self.inner_failed() {
                return;
            }
            if self.index == 0 || !self.open(self.index - 1) {
                self.inner = None;
                return;
            }
            if let Some(inner) = &mut self.inner {
                inner.seek_to_last();
            }
        }
    }

    fn inner(&self) -> &P::Cursor {
        self.inner
            .as_ref()
            .expect("concatenating iterator used while invalid")
    }
}

impl<P: Parts> InternalIterator for ConcatIterator<P> {
    fn valid(&self) -> bool {
        self.error.is_none() && self.inner_valid()
    }

    fn seek_to_first(&mut self) {
        if self.open(0) {
            if let Some(inner) = &mut self.inner {
                inner.seek_to_first();
            }
        }
        self.skip_forward();
    }

    fn seek_to_last(&mut self) {
        if self.parts.count() == 0 {
            self.inner = None;
            return;
        }
        if self.open(self.parts.count() - 1) {
            if let Some(inner) = &mut self.inner {
                inner.seek_to_last();
            }
        }
        self.skip_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        let index = self.parts.part_of(target);
        // A seek within the part already open keeps its cursor (and what
        // it holds: a table's blocks, a log's sorted view).
        let reuse = self.inner.is_some() && self.index == index && self.error.is_none();
        if reuse || self.open(index) {
            if let Some(inner) = &mut self.inner {
                inner.seek(target);
            }
        }
        self.skip_forward();
    }

    fn next(&mut self) {
        if let Some(inner) = &mut self.inner {
            inner.next();
        }
        self.skip_forward();
    }

    fn prev(&mut self) {
        if let Some(inner) = &mut self.inner {
            inner.prev();
        }
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        self.inner().key()
    }

    fn value(&self) -> &[u8] {
        self.inner().value()
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        self.inner.as_ref().map_or(Ok(()), |i| i.status())
    }

    fn location(&self) -> Option<EntryLocation> {
        self.inner.as_ref()?.location()
    }
}
