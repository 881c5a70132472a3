//! SCAN cursors. Clients treat a cursor as a number, but the key space is
//! ordered by key: a cursor names the key the next SCAN starts at, kept here
//! (shared by all connections, as Redis cursors are). The table is bounded;
//! the oldest cursors are forgotten first, and a forgotten cursor gets
//! `ERR invalid cursor`.

use std::collections::{HashMap, VecDeque};

use parking_lot::Mutex;

/// Cursors remembered (a cursor is one key: at most `MAX_KEY_SIZE`).
const CAPACITY: usize = 16_384;

pub struct ScanCursors {
    inner: Mutex<Table>,
}

struct Table {
    next_id: u64,
    keys: HashMap<u64, Vec<u8>>,
    order: VecDeque<u64>,
}

impl ScanCursors {
    /// Ids start from `first_id` (nonzero: 0 is the start of the key space);
    /// a per-start value keeps a restarted server from honouring old ids.
    pub fn new(first_id: u64) -> ScanCursors {
        ScanCursors {
            inner: Mutex::new(Table {
                next_id: first_id.max(1),
                keys: HashMap::new(),
                order: VecDeque::new(),
            }),
        }
    }

    pub fn insert(&self, key: Vec<u8>) -> u64 {
        let mut table = self.inner.lock();
        let id = table.next_id;
        table.next_id = table.next_id.checked_add(1).unwrap_or(1);
        if table.order.len() == CAPACITY {
            if let Some(oldest) = table.order.pop_front() {
                table.keys.remove(&oldest);
            }
        }
        table.keys.insert(id, key);
        table.order.push_back(id);
        id
    }

    pub fn get(&self, id: u64) -> Option<Vec<u8>> {
        self.inner.lock().keys.get(&id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oldest_cursors_are_forgotten() {
        let cursors = ScanCursors::new(7);
        let first = cursors.insert(b"a".to_vec());
        assert_eq!(first, 7);
        assert_eq!(cursors.get(first), Some(b"a".to_vec()));
        for i in 0..CAPACITY {
            cursors.insert(i.to_string().into_bytes());
        }
        assert_eq!(cursors.get(first), None);
        assert_eq!(cursors.get(first + 1), Some(b"0".to_vec()));
    }
}
