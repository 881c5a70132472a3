//! A chunk's heat for the munk cache's LFU: accesses counted, halved once
//! per `DECAY_PERIOD` accesses to the store (the paper's exponential
//! decay). The halving is applied lazily: a heat remembers the epoch it was
//! last brought up to date in, and is halved once per epoch passed when it
//! is next read or counted, so a decay costs nothing however many chunks
//! the store has (it walked every chunk before).

use std::sync::atomic::{AtomicU64, Ordering};

/// Bits of the packed word holding the count; the epoch takes the rest.
const COUNT_BITS: u32 = 40;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
/// Epochs compare modulo 2^24: a heat untouched for 40 epochs is 0 anyway.
const EPOCH_MASK: u64 = (1 << (64 - COUNT_BITS)) - 1;

/// A chunk's heat: its count, halved once per epoch since `epoch`.
#[derive(Default)]
pub(super) struct Heat(AtomicU64);

impl Heat {
    /// The heat as of `epoch`.
    pub fn get(&self, epoch: u64) -> u64 {
        decayed(self.0.load(Ordering::Relaxed), epoch)
    }

    /// Adds `weight` accesses in `epoch`; returns the new heat.
    pub fn add(&self, weight: u64, epoch: u64) -> u64 {
        let mut heat = 0;
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |word| {
                heat = (decayed(word, epoch) + weight).min(COUNT_MASK);
                Some(pack(heat, epoch))
            });
        heat
    }

    /// Takes `other`'s heat (a split's children inherit their parent's).
    pub fn inherit(&self, other: &Heat) {
        self.0
            .store(other.0.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

fn pack(count: u64, epoch: u64) -> u64 {
    ((epoch & EPOCH_MASK) << COUNT_BITS) | count
}

fn decayed(word: u64, epoch: u64) -> u64 {
    let since = (epoch.wrapping_sub(word >> COUNT_BITS)) & EPOCH_MASK;
    match since {
        0 => word & COUNT_MASK,
        n if n >= u64::from(COUNT_BITS) => 0,
        n => (word & COUNT_MASK) >> n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heat_halves_once_per_epoch_passed_when_next_read_or_counted() {
        let heat = Heat::default();
        assert_eq!(heat.add(40, 3), 40);
        assert_eq!(heat.get(3), 40);
        assert_eq!(heat.get(4), 20);
        assert_eq!(heat.get(6), 5);
        // Counting in a later epoch decays first, then adds.
        assert_eq!(heat.add(1, 5), 11);
        assert_eq!(heat.get(5), 11);
        assert_eq!(heat.get(5 + 40), 0);
    }

    #[test]
    fn epochs_compare_across_the_wrap() {
        let heat = Heat::default();
        let last = EPOCH_MASK;
        heat.add(8, last);
        // The epoch counter goes on past the packed bits.
        assert_eq!(heat.get(last + 1), 4);
        assert_eq!(heat.get(last + 3), 1);
        let child = Heat::default();
        child.inherit(&heat);
        assert_eq!(child.get(last + 1), 4);
    }
}
