//! LevelDB's grandparent cut: a compaction output table ends before it
//! overlaps too many bytes of the level below the output level, so that
//! compacting it later rewrites a bounded amount (`ShouldStopBefore`).

use std::cmp::Ordering;
use std::sync::Arc;

use crate::format::KeyOrder;
use crate::version::TableMeta;

pub struct GrandparentCut {
    /// The tables of the level below the output, in key order.
    tables: Vec<Arc<TableMeta>>,
    /// The first table not wholly below the last key offered.
    index: usize,
    seen_key: bool,
    /// Bytes of grandparent tables the current output has passed over.
    overlapped: u64,
    /// Cut once `overlapped` exceeds this; 0 never cuts.
    limit: u64,
    order: KeyOrder,
}

impl GrandparentCut {
    /// Cuts over `tables` (sorted by `order`).
    pub fn new(tables: Vec<Arc<TableMeta>>, limit: u64, order: KeyOrder) -> GrandparentCut {
        GrandparentCut {
            tables,
            index: 0,
            seen_key: false,
            overlapped: 0,
            limit,
            order,
        }
    }

    /// A cut that never cuts.
    pub fn none() -> GrandparentCut {
        GrandparentCut::new(Vec::new(), 0, KeyOrder::Bytewise)
    }

    /// Whether the current output table should end before the entry with
    /// this internal key; keys arrive in ascending order.
    pub fn should_stop_before(&mut self, internal_key: &[u8]) -> bool {
        if self.limit == 0 {
            return false;
        }
        while let Some(t) = self.tables.get(self.index) {
            if self.order.internal(internal_key, &t.largest) != Ordering::Greater {
                break;
            }
            if self.seen_key {
                self.overlapped += t.length;
            }
            self.index += 1;
        }
        self.seen_key = true;
        if self.overlapped > self.limit {
            self.overlapped = 0;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::internal_key::{InternalKey, ValueKind};
    use crate::version::meta::tests::table;

    fn key(k: &str) -> Vec<u8> {
        InternalKey::new(k.as_bytes(), 5, ValueKind::Value).into_vec()
    }

    #[test]
    fn cuts_once_the_output_passed_more_than_the_limit() {
        // Grandparents of 100 bytes each: [a,b] [c,d] [e,f] [g,h].
        let gp = vec![
            table(1, "a", "b"),
            table(2, "c", "d"),
            table(3, "e", "f"),
            table(4, "g", "h"),
        ];
        let mut cut = GrandparentCut::new(gp, 150, KeyOrder::Bytewise);
        assert!(!cut.should_stop_before(&key("a")));
        assert!(!cut.should_stop_before(&key("c")), "passed [a,b]: 100");
        assert!(cut.should_stop_before(&key("e")), "passed [c,d] too: 200");
        assert!(!cut.should_stop_before(&key("f")), "a new table starts");
        assert!(!cut.should_stop_before(&key("g")), "passed [e,f]: 100");
        assert!(!GrandparentCut::none().should_stop_before(&key("z")));
    }
}
