//! A table's filter: the built-in Bloom filter or one of a named
//! [`FilterPolicy`]. Which one a table is built with, and whether a reader
//! may use the filter a table holds: only under the policy that built it
//! (by name; the built-in Bloom filter records no name), as LevelDB
//! ignores a filter whose policy name differs.

use std::sync::Arc;

use super::bloom::{BloomBuilder, BloomFilter};
use super::filter_policy::FilterPolicy;
use super::options::TableOptions;

/// Collects the user keys of a table being built.
pub(super) enum FilterBuilder {
    Bloom(BloomBuilder),
    Named {
        policy: Arc<dyn FilterPolicy>,
        /// The keys back to back; `ends[i]` is where key `i` ends.
        keys: Vec<u8>,
        ends: Vec<usize>,
    },
}

impl FilterBuilder {
    /// The filter `options` ask for: the policy's when one is set, else
    /// the built-in Bloom filter unless its bits per key are 0.
    pub fn for_options(options: &TableOptions) -> Option<FilterBuilder> {
        match &options.filter_policy {
            Some(policy) => Some(FilterBuilder::Named {
                policy: Arc::clone(policy),
                keys: Vec::new(),
                ends: Vec::new(),
            }),
            None => (options.bloom_bits_per_key > 0)
                .then(|| FilterBuilder::Bloom(BloomBuilder::new(options.bloom_bits_per_key))),
        }
    }

    /// Adds a distinct user key, in table order.
    pub fn add(&mut self, user_key: &[u8]) {
        match self {
            FilterBuilder::Bloom(bloom) => bloom.add(user_key),
            FilterBuilder::Named { keys, ends, .. } => {
                keys.extend_from_slice(user_key);
                ends.push(keys.len());
            }
        }
    }

    /// The encoded filter; empty when a policy made an empty one (the
    /// table then gets no filter).
    pub fn finish(&self) -> Vec<u8> {
        match self {
            FilterBuilder::Bloom(bloom) => bloom.finish(),
            FilterBuilder::Named { policy, keys, ends } => {
                let mut start = 0;
                let list: Vec<&[u8]> = ends
                    .iter()
                    .map(|&end| {
                        let key = &keys[start..end];
                        start = end;
                        key
                    })
                    .collect();
                let mut filter = Vec::new();
                policy.create_filter(&list, &mut filter);
                filter
            }
        }
    }

    /// The name the table records; `None` for the built-in Bloom filter.
    pub fn policy_name(&self) -> Option<&str> {
        match self {
            FilterBuilder::Bloom(_) => None,
            FilterBuilder::Named { policy, .. } => Some(policy.name()),
        }
    }
}

/// True when a reader opened with `policy` (`None`: the built-in Bloom
/// filter) may use a filter built by the policy named `recorded` (`None`:
/// the built-in Bloom filter).
pub(super) fn usable(recorded: Option<&str>, policy: Option<&Arc<dyn FilterPolicy>>) -> bool {
    recorded == policy.map(|p| p.name())
}

/// The filter of an open table.
pub(super) enum TableFilter {
    Bloom(BloomFilter),
    Named {
        policy: Arc<dyn FilterPolicy>,
        filter: Vec<u8>,
    },
}

impl TableFilter {
    /// Decodes the filter block `data` for the reader's `policy`, which
    /// [`usable`] accepted; `Err` carries the corruption reason of a Bloom
    /// filter that does not decode (a policy's bytes are its own).
    pub fn decode(
        data: Vec<u8>,
        policy: Option<&Arc<dyn FilterPolicy>>,
    ) -> Result<TableFilter, &'static str> {
        match policy {
            None => BloomFilter::decode(data).map(TableFilter::Bloom),
            Some(policy) => Ok(TableFilter::Named {
                policy: Arc::clone(policy),
                filter: data,
            }),
        }
    }

    /// Bytes the filter holds in memory.
    pub fn memory_bytes(&self) -> u64 {
        match self {
            TableFilter::Bloom(bloom) => bloom.memory_bytes(),
            TableFilter::Named { filter, .. } => filter.capacity() as u64,
        }
    }

    /// False means `user_key` is absent (or the policy is wrong).
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        match self {
            TableFilter::Bloom(bloom) => bloom.may_contain(user_key),
            TableFilter::Named { policy, filter } => policy.key_may_match(user_key, filter),
        }
    }
}
