//! What recovery keeps of the writes past the durable sequence. Every
//! chunk has its own log, and a sync round (`ChunkStore::sync_dirty_logs`)
//! syncs them one after the other: a power loss in the middle of one
//! keeps a later write in a log already synced and loses an earlier one
//! in a log not synced yet. Sequence numbers are handed out without gaps,
//! so the writes a recovery may keep are those up to the first number
//! that no log holds; the ones after it are dropped, and the store holds
//! a prefix of the writes. Below the durable sequence (`CHUNKS`) every
//! write was synced, and its numbers need not be in a log any more (a
//! funk's table holds them).

/// The first and last sequence numbers of a logged batch (or part).
pub(super) type SeqRange = (u64, u64);

/// The first sequence number above `durable` that none of `ranges` (each
/// the first and last number of a logged batch) holds, if a range starts
/// past it: the writes from there on are to be dropped. `None` when the
/// ranges leave no gap.
pub(super) fn first_gap(durable: u64, ranges: impl IntoIterator<Item = SeqRange>) -> Option<u64> {
    let mut ranges: Vec<SeqRange> = ranges
        .into_iter()
        .filter(|&(_, last)| last > durable)
        .collect();
    ranges.sort_unstable();
    let mut next = durable + 1;
    for (first, last) in ranges {
        if first > next {
            return Some(next);
        }
        next = next.max(last + 1);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::first_gap;

    #[test]
    fn contiguous_ranges_in_any_order_leave_no_gap() {
        assert_eq!(first_gap(10, [(14, 20), (11, 13), (21, 21)]), None);
        assert_eq!(first_gap(10, []), None);
    }

    #[test]
    fn ranges_at_or_below_the_durable_sequence_are_not_needed() {
        // 5..=9 went to a funk: only what follows 10 must be contiguous.
        assert_eq!(first_gap(10, [(1, 4), (11, 12)]), None);
    }

    #[test]
    fn the_first_missing_number_cuts_everything_after_it() {
        assert_eq!(first_gap(10, [(11, 12), (15, 15), (13, 13)]), Some(14));
        // The first write past the durable sequence is lost.
        assert_eq!(first_gap(10, [(12, 30)]), Some(11));
    }

    #[test]
    fn parts_of_one_batch_overlap_its_whole_in_the_batch_log() {
        // A cross-chunk batch 11..=16: its record in the batch log, and
        // its parts in two chunk logs.
        assert_eq!(
            first_gap(10, [(11, 16), (11, 13), (14, 16), (17, 17)]),
            None
        );
    }
}
