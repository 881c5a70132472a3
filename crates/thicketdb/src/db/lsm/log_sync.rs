//! Syncing the log without a write (RocksDB's `SyncWAL`): a server's group
//! commit writes without syncing, then one `sync_log` makes every write
//! before it durable. The `fdatasync` runs with the log released, so the
//! write leader appends on meanwhile and no writer waits for the device;
//! a synced write, by contrast, holds the log (and so the write queue)
//! through its `fdatasync`.

use std::sync::Arc;

use super::background_state::set_background_error;
use super::DbInner;
use crate::error::Result;
use crate::stats::Counters;

/// Makes every write that returned before this call durable.
pub(crate) fn sync_log(inner: &Arc<DbInner>) -> Result<()> {
    inner.check_background_error()?;
    let (syncs, syncer) = {
        let mut log = inner.log.lock();
        log.syncer(inner.fs.as_ref(), &inner.dir)
            .inspect_err(|e| set_background_error(inner, e.clone()))?
    };
    Counters::add(&inner.counters.fsyncs_log, syncs);
    if let Some(syncer) = syncer {
        // After a failed fdatasync the page cache may have dropped the
        // dirty pages it could not write (and the next sync would then
        // succeed without them): no later write may be acknowledged.
        syncer
            .sync_data()
            .inspect_err(|e| set_background_error(inner, e.clone()))?;
        Counters::add(&inner.counters.fsyncs_log, 1);
    }
    Ok(())
}
