//! `thicket serve`: ThicketDB behind the Redis protocol (RESP2, and RESP3
//! after `HELLO 3`), with a Prometheus metrics endpoint. See
//! `docs/server.md` for the commands, limits and durability.
//!
//! ```no_run
//! use thicket_server::{start, ServerConfig};
//! let db = thicketdb::Db::open("/tmp/served", thicketdb::Options::default())?;
//! let server = start(db, ServerConfig::new("127.0.0.1:6379".parse()?))?;
//! println!("listening on {}", server.addr);
//! server.wait()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod commands;
mod connection;
mod cursors;
mod durability;
mod expiry;
mod glob;
mod limits;
mod meta;
mod metrics;
mod metrics_http;
pub mod resp;
mod server;
mod session;
mod shared;
mod store;
mod tunables;
mod typed;
mod walk;

use std::io::Write;
use std::net::SocketAddr;

pub use durability::FsyncPolicy;
pub use limits::Limits;
pub use server::{
    start, RunningServer, ServerConfig, ServerError, DEFAULT_DATABASES, DEFAULT_WORKER_THREADS,
};

/// The arguments of `thicket serve` (besides `--db`, `--profile` and
/// `--option`, which open the store).
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Address for Redis clients (port 0: any free port; the address is
    /// printed as `listening on ADDR`).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:6379")]
    pub listen: SocketAddr,
    /// Address of the Prometheus endpoint (`GET /metrics`).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// Reply to writes only after the log is synced (`appendfsync always`;
    /// `CONFIG SET appendfsync` changes it at run time).
    #[arg(long)]
    pub sync: bool,
    /// Databases `SELECT` offers: 0 is the store's default keyspace, `i`
    /// the keyspace `db<i>`, created by the first write into it.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_DATABASES,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub databases: u32,
    /// Threads that run client commands. Engine calls block their thread
    /// (a commit queued behind a log sync, a read from the device), so
    /// more threads than cores keep other clients served meanwhile.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_WORKER_THREADS,
          value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: u16,
}

/// Serves `db` until SIGTERM, SIGINT or SHUTDOWN, then closes it. Prints
/// `listening on ADDR` (and `metrics on ADDR`) once the ports are bound.
pub fn run(db: thicketdb::Db, args: &ServeArgs) -> Result<(), ServerError> {
    let config = ServerConfig {
        metrics: args.metrics,
        fsync: if args.sync {
            FsyncPolicy::Always
        } else {
            FsyncPolicy::No
        },
        handle_signals: true,
        databases: args.databases,
        worker_threads: usize::from(args.threads),
        ..ServerConfig::new(args.listen)
    };
    let server = start(db, config)?;
    let mut stdout = std::io::stdout().lock();
    let announced = writeln!(stdout, "listening on {}", server.addr)
        .and_then(|()| match server.metrics_addr {
            Some(addr) => writeln!(stdout, "metrics on {addr}"),
            None => Ok(()),
        })
        .and_then(|()| stdout.flush());
    drop(stdout);
    if let Err(e) = announced {
        server.shutdown();
        server.wait()?;
        return Err(ServerError::Io {
            context: "printing the listening address".into(),
            source: e,
        });
    }
    server.wait()
}
