//! What the server knows about one connection.

use crate::commands::CommandSpec;
use crate::resp::{Args, Protocol};
use crate::store::Database;

pub struct Session {
    pub id: u64,
    pub name: Option<Vec<u8>>,
    pub protocol: Protocol,
    /// What SELECT or THICKET.SELECT chose (database 0 at first).
    pub database: Database,
    pub multi: Option<Multi>,
    /// WATCHed keys: the key, its lock stripe's write count, the flush
    /// count, and the key's expiry when watched (`None`: absent; 0: no
    /// expiry). (Stripes are by key alone, so a
    /// write to the key in any database counts.)
    pub watched: Vec<Watched>,
    /// A command since the last reply flush committed a write.
    pub wrote: bool,
    /// QUIT or SHUTDOWN: close the connection.
    pub close: Option<Close>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Close {
    /// QUIT: the reply goes out, then the connection closes.
    AfterReply,
    /// SHUTDOWN: the connection closes without a reply, as in Redis.
    WithoutReply,
}

pub struct Watched {
    pub key: Vec<u8>,
    pub touched: u64,
    pub flushes: u64,
    pub expire_at: Option<u64>,
}

/// Commands queued between MULTI and EXEC.
#[derive(Default)]
pub struct Multi {
    pub queue: Vec<(&'static CommandSpec, Args)>,
    /// A queued command was refused: EXEC will abort.
    pub aborted: bool,
}

impl Session {
    pub fn new(id: u64) -> Session {
        Session {
            id,
            name: None,
            protocol: Protocol::Resp2,
            database: Database::Index(0),
            multi: None,
            watched: Vec::new(),
            wrote: false,
            close: None,
        }
    }
}
