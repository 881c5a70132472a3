//! Approximate file bytes used by a key range, as LevelDB's
//! `GetApproximateSizes`: for each table overlapping the range, the bytes
//! between the positions of the range's ends inside it (found through the
//! table's index). Memtables are not counted.

use crate::db::Db;
use crate::error::Result;
use crate::format::internal_key::{InternalKey, ValueKind, MAX_SEQUENCE};
use crate::version::table_cache::TableCache;
use crate::version::TableMeta;

impl Db {
    /// Approximate bytes of the default keyspace's tables holding keys in
    /// `[start, limit)`.
    pub fn approximate_size(&self, start: &[u8], limit: &[u8]) -> Result<u64> {
        let inner = self.lsm_for("approximate_size")?;
        let order = &inner.options.comparator;
        if !order.lt(start, limit) {
            return Ok(0);
        }
        let sv = inner.default.super_version();
        let mut total = 0;
        for t in sv.version.tables() {
            if !t.overlaps(Some(start), Some(limit), order) {
                continue;
            }
            let from = offset_of(&inner.table_cache, t, start)?;
            let to = offset_of(&inner.table_cache, t, limit)?;
            total += to.saturating_sub(from);
        }
        Ok(total)
    }
}

/// Where inside table `t` the keys at or above `key` start, in bytes from
/// the table's first byte.
fn offset_of(cache: &TableCache, t: &TableMeta, key: &[u8]) -> Result<u64> {
    let order = cache.order();
    if order.le(key, t.smallest_user_key()) {
        return Ok(0);
    }
    if order.lt(t.largest_user_key(), key) {
        return Ok(t.length);
    }
    let table = cache.table(t)?;
    let index = table.index();
    let target = InternalKey::new(key, MAX_SEQUENCE, ValueKind::SEEK);
    let block = index.seek(target.encoded());
    Ok(if block < index.len() {
        index.handle(block).offset
    } else {
        t.length
    })
}

#[cfg(test)]
mod tests {
    use crate::db::Db;
    use crate::options::Options;

    #[test]
    fn sizes_grow_with_the_range_and_ignore_empty_ones() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        for i in 0..20_000u32 {
            db.put(format!("k{i:06}").as_bytes(), [b'x'; 100]).unwrap();
        }
        db.compact_range(None, None).unwrap();
        let half = db.approximate_size(b"k000000", b"k010000").unwrap();
        let all = db.approximate_size(b"k000000", b"k020000").unwrap();
        let live = db.stats().live_table_bytes;
        assert!(half > live / 3 && half < live * 2 / 3, "{half} of {live}");
        assert!(all > live * 9 / 10 && all <= live, "{all} of {live}");
        assert_eq!(db.approximate_size(b"z", b"zz").unwrap(), 0);
        assert_eq!(db.approximate_size(b"k02", b"k01").unwrap(), 0);
    }
}
