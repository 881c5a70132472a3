//! Which entries a merge may drop: versions hidden by a newer version or a
//! range tombstone that every snapshot sees, and deletions (point or range)
//! that nothing older underneath needs.

use crate::format::internal_key::{ParsedKey, ValueKind};
use crate::format::range_tombstone::Fragments;

pub struct DropRule<F: Fn(&[u8]) -> bool> {
    /// Oldest sequence any reader may still read at.
    smallest_snapshot: u64,
    /// Whether no level below the output can hold the user key.
    is_bottommost_for: F,
    current_key: Vec<u8>,
    has_current: bool,
    last_sequence_for_key: u64,
    /// The merge's range tombstones: an entry under one that every reader
    /// sees is dropped.
    range_dels: Fragments,
    pub dropped: u64,
}

impl<F: Fn(&[u8]) -> bool> DropRule<F> {
    pub fn new(smallest_snapshot: u64, is_bottommost_for: F) -> DropRule<F> {
        DropRule {
            smallest_snapshot,
            is_bottommost_for,
            current_key: Vec::new(),
            has_current: false,
            last_sequence_for_key: u64::MAX,
            range_dels: Fragments::default(),
            dropped: 0,
        }
    }

    /// Also drops entries the merge's range tombstones delete for everyone.
    pub fn with_range_deletions(self, range_dels: Fragments) -> DropRule<F> {
        DropRule { range_dels, ..self }
    }

    /// Decides for the next entry of a merged stream in internal-key order.
    /// Malformed keys are kept (the caller's checks report them).
    pub fn keep(&mut self, internal_key: &[u8]) -> bool {
        let Some(k) = ParsedKey::parse(internal_key) else {
            return true;
        };
        if !self.has_current || k.user_key != self.current_key.as_slice() {
            self.current_key.clear();
            self.current_key.extend_from_slice(k.user_key);
            self.has_current = true;
            self.last_sequence_for_key = u64::MAX;
        }
        let drop = if self.last_sequence_for_key <= self.smallest_snapshot {
            // A newer version of this key is visible to every reader.
            true
        } else {
            (k.kind == ValueKind::Deletion
                && k.sequence <= self.smallest_snapshot
                && (self.is_bottommost_for)(k.user_key))
                || (!self.range_dels.is_empty()
                    && self
                        .range_dels
                        .covering_seq(k.user_key, self.smallest_snapshot)
                        > k.sequence)
        };
        self.last_sequence_for_key = k.sequence;
        if drop {
            self.dropped += 1;
        }
        !drop
    }
}

/// The range tombstones a merge writes out of `merged` (its inputs'
/// fragments together): a tombstone some snapshot cannot see stays; of
/// those every reader sees, only a fragment's newest is needed (it deletes
/// all the others do), and it goes too when `holds_nothing_older` says no
/// data outside the merge can lie in the fragment's range (the merge drops
/// what it covers inside).
pub fn surviving_range_deletions(
    mut merged: Fragments,
    smallest_snapshot: u64,
    holds_nothing_older: impl Fn(&[u8], &[u8]) -> bool,
) -> Fragments {
    merged.retain_seqs(|fragment, seq| {
        seq > smallest_snapshot
            || (fragment.visible_seq(smallest_snapshot) == Some(seq)
                && !holds_nothing_older(&fragment.start, &fragment.end))
    });
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::internal_key::InternalKey;
    use crate::format::range_tombstone::RangeTombstone;

    fn k(user: &str, seq: u64, kind: ValueKind) -> Vec<u8> {
        InternalKey::new(user.as_bytes(), seq, kind).into_vec()
    }

    #[test]
    fn keeps_newest_and_snapshot_versions() {
        let mut rule = DropRule::new(5, |_| false);
        assert!(rule.keep(&k("a", 9, ValueKind::Value)), "newest");
        assert!(
            rule.keep(&k("a", 7, ValueKind::Value)),
            "the newer version is invisible to snapshot 5"
        );
        assert!(
            rule.keep(&k("a", 4, ValueKind::Value)),
            "visible at snapshot 5"
        );
        assert!(
            !rule.keep(&k("a", 2, ValueKind::Value)),
            "hidden by 4 for everyone"
        );
        assert!(rule.keep(&k("b", 3, ValueKind::Deletion)), "not bottommost");
        assert!(!rule.keep(&k("b", 1, ValueKind::Value)));
        assert_eq!(rule.dropped, 2);
    }

    #[test]
    fn drops_deletions_at_the_bottom() {
        let mut rule = DropRule::new(10, |_| true);
        assert!(!rule.keep(&k("a", 5, ValueKind::Deletion)));
        assert!(!rule.keep(&k("a", 3, ValueKind::Value)));
        assert!(
            rule.keep(&k("b", 11, ValueKind::Deletion)),
            "newer than every snapshot"
        );
    }

    fn tombstones(list: &[(&str, &str, u64)]) -> Fragments {
        let list: Vec<RangeTombstone> = list
            .iter()
            .map(|&(start, end, seq)| RangeTombstone {
                start: start.into(),
                end: end.into(),
                seq,
            })
            .collect();
        Fragments::fragment(&list)
    }

    #[test]
    fn drops_entries_under_a_tombstone_every_reader_sees() {
        let dels = tombstones(&[("b", "d", 6)]);
        let mut rule = DropRule::new(10, |_| false).with_range_deletions(dels.clone());
        assert!(rule.keep(&k("a", 3, ValueKind::Value)), "outside");
        assert!(!rule.keep(&k("b", 5, ValueKind::Value)), "under it");
        assert!(rule.keep(&k("c", 7, ValueKind::Value)), "newer than it");
        assert!(rule.keep(&k("d", 1, ValueKind::Value)), "end is exclusive");
        let mut snapshot = DropRule::new(5, |_| false).with_range_deletions(dels);
        assert!(
            snapshot.keep(&k("b", 5, ValueKind::Value)),
            "snapshot 5 does not see the tombstone"
        );
    }

    #[test]
    fn tombstones_survive_for_snapshots_and_data_below() {
        let dels = tombstones(&[("a", "c", 3), ("b", "d", 5), ("b", "d", 12)]);
        let shape = |f: &Fragments| -> Vec<(Vec<u8>, Vec<u64>)> {
            f.iter()
                .map(|f| (f.start.clone(), f.seqs.clone()))
                .collect()
        };
        let kept = surviving_range_deletions(dels.clone(), 10, |_, _| false);
        assert_eq!(
            shape(&kept),
            [(b"a".to_vec(), vec![3]), (b"b".to_vec(), vec![12, 5])],
            "3 under 5 on [b, c) is redundant: [b, c) and [c, d) now read alike"
        );
        let bottom = surviving_range_deletions(dels, 10, |_, _| true);
        assert_eq!(
            shape(&bottom),
            [(b"b".to_vec(), vec![12])],
            "only what a snapshot still needs"
        );
    }
}
