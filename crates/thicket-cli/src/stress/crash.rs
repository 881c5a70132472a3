//! How a simulated process of the power-loss mode ends. Each process sees
//! the in-memory disk through its own `FaultFs` clone, which refuses every
//! change once the process has crashed (a dead process changes nothing).

use thicketdb::io::fault::FaultFs;

/// How the simulated process ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crash {
    /// Unsynced data and directory entries are lost.
    PowerLoss,
    /// Only bytes still buffered in the process are lost.
    Process,
}

impl Crash {
    /// Ends the running process on `disk`.
    pub fn strike(self, disk: &FaultFs) {
        match self {
            Crash::PowerLoss => disk.drop_unsynced(),
            Crash::Process => disk.crash_process(),
        }
    }
}
