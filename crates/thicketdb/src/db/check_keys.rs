//! The key checks `check_store` runs over every entry of every live table,
//! in either layout (order inside a table is `Table::verify_checksums`'s):
//!
//! - each key lies in the range the store recorded for its table: an LSM
//!   table's first and last internal keys in the MANIFEST, a funk's chunk
//!   in `CHUNKS`. Readers pick tables by those ranges, so a key outside is
//!   never found; and since the recorded ranges of a run are sorted and
//!   disjoint (`Version::apply`), keys inside them increase across the run.
//! - no sequence number (of an entry or a range tombstone) is above the
//!   last one the store recorded: a later write would reuse the number,
//!   and a snapshot would see the entry before it was written.

use std::sync::Arc;

use crate::error::{Error, Printable, Result};
use crate::format::internal_key::ParsedKey;
use crate::iterator::InternalIterator;
use crate::table::Table;

/// The range the store recorded for a table.
#[derive(Clone, Copy)]
pub(crate) enum Recorded<'a> {
    /// An LSM table: its first and last internal keys, inclusive.
    Table {
        smallest: &'a [u8],
        largest: &'a [u8],
    },
    /// A funk's table: its chunk's user keys, from `start` and below `end`
    /// (`None`: the keyspace's last chunk).
    Chunk {
        start: &'a [u8],
        end: Option<&'a [u8]>,
    },
}

/// Checks every entry of `table` against `recorded` and `last_sequence`;
/// a violation is corruption at the table's offset, naming the key.
pub(crate) fn check_table_keys(
    table: &Arc<Table>,
    recorded: Recorded<'_>,
    last_sequence: u64,
) -> Result<()> {
    let order = table.order().clone();
    let corrupt = |why: String| Error::corruption(table.path(), table.offset(), why);
    let mut it = table.iter_with(false);
    it.seek_to_first();
    while it.valid() {
        let key = it.key();
        let parsed =
            ParsedKey::parse(key).ok_or_else(|| corrupt("malformed internal key".into()))?;
        let user = Printable(parsed.user_key);
        if parsed.sequence > last_sequence {
            return Err(corrupt(format!(
                "key \"{user}\" has sequence {} above the store's last sequence {last_sequence}",
                parsed.sequence
            )));
        }
        let inside = match recorded {
            Recorded::Table { smallest, largest } => {
                order.internal(smallest, key).is_le() && order.internal(key, largest).is_le()
            }
            Recorded::Chunk { start, end } => {
                order.le(start, parsed.user_key) && end.is_none_or(|e| order.lt(parsed.user_key, e))
            }
        };
        if !inside {
            return Err(corrupt(format!(
                "key \"{user}\" (sequence {}) lies outside the table's recorded key range",
                parsed.sequence
            )));
        }
        it.next();
    }
    it.status()?;
    if let Some((_, newest)) = table.range_deletions().seq_range() {
        if newest > last_sequence {
            return Err(corrupt(format!(
                "a range tombstone has sequence {newest} above the store's last sequence \
                 {last_sequence}"
            )));
        }
    }
    Ok(())
}
