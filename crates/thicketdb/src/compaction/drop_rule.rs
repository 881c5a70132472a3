//! Which entries a merge may drop: versions hidden by a newer version that
//! every snapshot sees, and deletions that nothing older underneath needs.

use crate::format::internal_key::{ParsedKey, ValueKind};

pub struct DropRule<F: Fn(&[u8]) -> bool> {
    /// Oldest sequence any reader may still read at.
    smallest_snapshot: u64,
    /// Whether no level below the output can hold the user key.
    is_bottommost_for: F,
    current_key: Vec<u8>,
    has_current: bool,
    last_sequence_for_key: u64,
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
            dropped: 0,
        }
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
            k.kind == ValueKind::Deletion
                && k.sequence <= self.smallest_snapshot
                && (self.is_bottommost_for)(k.user_key)
        };
        self.last_sequence_for_key = k.sequence;
        if drop {
            self.dropped += 1;
        }
        !drop
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::internal_key::InternalKey;

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
}
