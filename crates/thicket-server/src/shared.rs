//! State every connection shares.

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use tokio::sync::watch;

use crate::cursors::ScanCursors;
use crate::durability::Durability;
use crate::limits::Limits;
use crate::metrics::{self, Metrics};
use crate::store::Store;
use crate::tunables::Tunables;

pub struct Shared {
    pub store: Store,
    pub durability: Durability,
    pub metrics: Metrics,
    pub cursors: ScanCursors,
    pub limits: Limits,
    pub tunables: Tunables,
    /// SELECT's indexes are `0..databases`.
    pub databases: u32,
    pub listen: SocketAddr,
    pub started: Instant,
    pub next_client_id: AtomicU64,
    /// Set to true to shut the server down (signal or SHUTDOWN).
    pub shutdown: watch::Sender<bool>,
}

impl Shared {
    pub fn request_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    pub fn render_metrics(&self) -> String {
        let engine = self.store.db().stats();
        self.metrics.render(&metrics::Snapshot {
            engine: &engine,
            sync: self.durability.counters(),
            fsync_policy: self.durability.policy().name(),
        })
    }
}
