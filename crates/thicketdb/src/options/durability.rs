//! `durability`: when a chunked store's writes reach the disk. An option
//! value, so it lives with the options; the modes are implemented in
//! `db/chunked/` (`checkpointer.rs` for the asynchronous one).

/// When writes become durable (YoDB §3.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// `WriteOptions::sync` decides per write; a power loss keeps a prefix
    /// of the writes through the last synced one.
    #[default]
    Sync,
    /// Chunked only: writes complete in memory and the page cache; a
    /// background checkpointer makes them durable every
    /// `checkpoint_interval` and records the point, and recovery returns
    /// the store to its last checkpoint (a prefix of the writes) without
    /// reading the logs. A write with `WriteOptions::sync` waits for a
    /// checkpoint that covers it.
    Async,
}

named_values!(Durability, "durability", {
    Sync => "sync",
    Async => "async",
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_are_refused() {
        for d in [Durability::Sync, Durability::Async] {
            assert_eq!(d.to_string().parse::<Durability>().unwrap(), d);
        }
        assert!("lazy".parse::<Durability>().is_err());
    }
}
