//! Waiting until the background threads have nothing left to do, so that a
//! benchmark can read a settled tree (RocksDB's `WaitForCompact`).

use super::DbInner;
use crate::error::{Error, Result};

/// Blocks until no flush or compaction is due or running (`Db::wait_for_compactions`).
pub(crate) fn wait_until_settled(inner: &DbInner) -> Result<()> {
    if inner.read_only {
        // No background work exists; the kept memtables are never flushed.
        return inner.check_open();
    }
    let mut bg = inner.background.lock();
    loop {
        if let Some(e) = &bg.error {
            return Err(Error::Background(Box::new(e.clone())));
        }
        if bg.shutting_down {
            return Err(Error::Closed);
        }
        // Claims and their release happen under this mutex, and every
        // finished flush or compaction signals `background_cv` under it after
        // installing its version: a state seen here as busy wakes us later.
        let settled = bg.idle()
            && !bg.manual_compaction
            && inner.trees().iter().all(|tree| {
                let sv = tree.super_version();
                sv.imms.is_empty()
                    && sv.version.merge_journal.is_none()
                    && tree.policy.pick(&sv.version, bg.busy_in(tree)).is_none()
            });
        if settled {
            return Ok(());
        }
        inner.background_cv.wait(bg.raw());
    }
}

#[cfg(test)]
mod tests {
    use crate::db::Db;
    use crate::options::Options;

    fn options() -> Options {
        Options {
            write_buffer_size: 64 << 10,
            target_table_size: 16 << 10,
            block_size: 1024,
            ..Options::default()
        }
    }

    /// Random-order writes through many small memtables leave flushes and
    /// compactions behind; once the wait returns, the policy owes nothing
    /// and the tree no longer changes.
    #[test]
    fn returns_once_nothing_is_due_and_the_tree_stays_put() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), options()).unwrap();
        let n = 20_000u64;
        for i in 0..n {
            // 7919 is prime to n: every key once, in a scattered order.
            let k = i * 7919 % n;
            db.put(format!("key{k:010}").as_bytes(), [7u8; 100])
                .unwrap();
        }
        db.wait_for_compactions().unwrap();
        let inner = db.inner();
        let settled = db.stats();
        assert_eq!(settled.immutable_memtables, 0);
        assert!(settled.compactions_merge > 0, "the load needed compactions");
        let version = inner.versions.lock().current();
        assert_eq!(inner.default.policy.pending_bytes(&version), 0);
        assert!(inner
            .default
            .policy
            .pick(&version, &crate::compaction::Busy::default())
            .is_none());
        std::thread::sleep(std::time::Duration::from_millis(200));
        let later = db.stats();
        assert_eq!(later.compactions_merge, settled.compactions_merge);
        assert_eq!(later.tables_per_level, settled.tables_per_level);
        // Every key is still there.
        for k in (0..n).step_by(97) {
            assert!(db.get(format!("key{k:010}").as_bytes()).unwrap().is_some());
        }
        db.close().unwrap();
    }

    #[test]
    fn a_closed_store_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), options()).unwrap();
        let other = db.clone();
        db.close().unwrap();
        assert!(matches!(
            other.wait_for_compactions(),
            Err(crate::error::Error::Closed)
        ));
    }
}
