//! SifrDB's parallel seek (§5.3.2): the first seek of a range read
//! positions every source (memtables, runs) in parallel; iteration after
//! it stays serial.

use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::{Condvar, Mutex};

use super::pool::Job;
use crate::format::KeyOrder;
use crate::iterator::{InternalIterator, VecIterator};
use crate::stats::Counters;

pub(crate) struct ParallelSeek {
    target: Vec<u8>,
    children: Vec<Mutex<Box<dyn InternalIterator>>>,
    /// Children taken so far.
    taken: AtomicUsize,
    /// Children sought so far.
    sought: Mutex<usize>,
    all_sought: Condvar,
}

impl ParallelSeek {
    pub fn new(children: Vec<Box<dyn InternalIterator>>, target: &[u8]) -> ParallelSeek {
        ParallelSeek {
            target: target.to_vec(),
            children: children.into_iter().map(Mutex::new).collect(),
            taken: AtomicUsize::new(0),
            sought: Mutex::new(0),
            all_sought: Condvar::new(),
        }
    }

    /// The children, every one positioned, once the last seek ended.
    pub fn wait(&self) -> Vec<Box<dyn InternalIterator>> {
        let mut sought = self.sought.lock();
        while *sought < self.children.len() {
            self.all_sought.wait(&mut sought);
        }
        drop(sought);
        // Search threads may still hold the job (not the children): move
        // the children out, leaving empty placeholders.
        self.children
            .iter()
            .map(|c| {
                let placeholder = VecIterator::new(Vec::new(), KeyOrder::Bytewise);
                std::mem::replace(&mut *c.lock(), Box::new(placeholder))
            })
            .collect()
    }
}

impl Job for ParallelSeek {
    fn run_one(&self, _: &Counters, _: bool) -> bool {
        let i = self.taken.fetch_add(1, Ordering::AcqRel);
        let Some(child) = self.children.get(i) else {
            return false;
        };
        child.lock().seek(&self.target);
        let mut sought = self.sought.lock();
        *sought += 1;
        if *sought == self.children.len() {
            self.all_sought.notify_all();
        }
        true
    }

    fn has_work(&self) -> bool {
        self.taken.load(Ordering::Acquire) < self.children.len()
    }
}
