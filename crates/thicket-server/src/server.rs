//! Starting and stopping: listeners, the runtime, the accept loop, and the
//! graceful shutdown (stop accepting, let connections finish the requests
//! they have received, sync, close the store).

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use thicketdb::Db;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use crate::cursors::ScanCursors;
use crate::durability::{Durability, FsyncPolicy};
use crate::limits::Limits;
use crate::metrics::Metrics;
use crate::shared::Shared;
use crate::store::Store;
use crate::{commands, connection, metrics_http};

/// Connections get this long to finish after shutdown starts; then they
/// are dropped (their unanswered requests were never acknowledged).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Engine(#[from] thicketdb::Error),
}

fn io_error(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> ServerError {
    let context = context.into();
    move |source| ServerError::Io { context, source }
}

/// Redis's default number of databases.
pub const DEFAULT_DATABASES: u32 = 16;

/// Threads running client commands by default. With `appendfsync always`,
/// 2 threads on 2 cores served 5.8k synced SETs/s from 50 clients and 16
/// served 16.2k (docs/server.md, "Durability"): a commit waiting behind a
/// log sync holds its thread.
pub const DEFAULT_WORKER_THREADS: u16 = 16;

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub metrics: Option<SocketAddr>,
    pub fsync: FsyncPolicy,
    pub limits: Limits,
    /// Databases SELECT offers (Redis's `databases`): 0 is the store's
    /// default keyspace, `i > 0` the keyspace `db<i>`.
    pub databases: u32,
    /// Threads that run client commands (the async runtime's workers).
    pub worker_threads: usize,
    /// Shut down on SIGTERM and SIGINT (the CLI; not in-process tests).
    pub handle_signals: bool,
}

impl ServerConfig {
    pub fn new(listen: SocketAddr) -> ServerConfig {
        ServerConfig {
            listen,
            metrics: None,
            fsync: FsyncPolicy::No,
            limits: Limits::default(),
            databases: DEFAULT_DATABASES,
            worker_threads: usize::from(DEFAULT_WORKER_THREADS),
            handle_signals: false,
        }
    }
}

/// A server running on its own threads.
pub struct RunningServer {
    pub addr: SocketAddr,
    pub metrics_addr: Option<SocketAddr>,
    shutdown: watch::Sender<bool>,
    thread: JoinHandle<Result<(), ServerError>>,
}

impl RunningServer {
    /// Starts shutting down (as SHUTDOWN or SIGTERM do).
    pub fn shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    /// Waits until the server has shut down and closed the store.
    pub fn wait(self) -> Result<(), ServerError> {
        self.thread
            .join()
            .unwrap_or_else(|_| Err(io_error("server thread")(std::io::Error::other("panicked"))))
    }
}

fn bind(addr: SocketAddr, what: &str) -> Result<std::net::TcpListener, ServerError> {
    let listener =
        std::net::TcpListener::bind(addr).map_err(io_error(format!("binding {what} {addr}")))?;
    listener
        .set_nonblocking(true)
        .map_err(io_error("setting the listener non-blocking"))?;
    Ok(listener)
}

/// Binds the listeners and starts serving `db`; the store is closed when
/// the server stops.
pub fn start(db: Db, config: ServerConfig) -> Result<RunningServer, ServerError> {
    let listener = bind(config.listen, "the client address")?;
    let addr = listener
        .local_addr()
        .map_err(io_error("reading the bound address"))?;
    let metrics_listener = config
        .metrics
        .map(|a| bind(a, "the metrics address"))
        .transpose()?;
    let metrics_addr = metrics_listener
        .as_ref()
        .map(|l| l.local_addr())
        .transpose()
        .map_err(io_error("reading the bound metrics address"))?;
    let store = Store::new(db.clone())?;
    let durability = Durability::start(db.clone(), config.fsync)
        .map_err(io_error("starting the sync thread"))?;
    let (shutdown, _) = watch::channel(false);
    let cursor_seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_secs() << 20);
    let shared = Arc::new(Shared {
        store,
        durability,
        metrics: Metrics::new(commands::names()),
        cursors: ScanCursors::new(cursor_seed),
        limits: config.limits.clone(),
        tunables: crate::tunables::Tunables::new(),
        databases: config.databases.max(1),
        listen: addr,
        started: Instant::now(),
        next_client_id: AtomicU64::new(1),
        shutdown: shutdown.clone(),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.worker_threads.max(1))
        .enable_all()
        .thread_name("thicket-serve")
        .build()
        .map_err(io_error("starting the async runtime"))?;
    let handle_signals = config.handle_signals;
    let thread = std::thread::Builder::new()
        .name("thicket-accept".into())
        .spawn(move || {
            let served = runtime.block_on(async {
                let listener = TcpListener::from_std(listener)
                    .map_err(io_error("registering the listener"))?;
                let metrics_listener = metrics_listener
                    .map(TcpListener::from_std)
                    .transpose()
                    .map_err(io_error("registering the metrics listener"))?;
                serve(shared.clone(), listener, metrics_listener, handle_signals).await
            });
            runtime.shutdown_timeout(Duration::from_secs(1));
            shared.durability.stop();
            drop(shared);
            let closed = db.close().map_err(ServerError::from);
            served.and(closed)
        })
        .map_err(io_error("starting the server thread"))?;
    Ok(RunningServer {
        addr,
        metrics_addr,
        shutdown,
        thread,
    })
}

async fn serve(
    shared: Arc<Shared>,
    listener: TcpListener,
    metrics_listener: Option<TcpListener>,
    handle_signals: bool,
) -> Result<(), ServerError> {
    if handle_signals {
        spawn_signal_handler(shared.clone())?;
    }
    if let Some(listener) = metrics_listener {
        tokio::spawn(metrics_http::serve(
            shared.clone(),
            listener,
            shared.shutdown.subscribe(),
        ));
    }
    tokio::spawn(crate::expiry::run(shared.clone()));
    // Each connection holds a sender; `recv` returns None once all are gone.
    let (alive, mut all_closed) = mpsc::channel::<()>(1);
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((mut stream, _)) => {
                    if shared.metrics.connected() >= shared.limits.max_clients as u64 {
                        shared.metrics.connections_rejected.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        tokio::spawn(async move {
                            let _ = stream.write_all(b"-ERR max number of clients reached\r\n").await;
                        });
                        continue;
                    }
                    shared.metrics.connections_accepted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let guard = alive.clone();
                    let shutdown = shared.shutdown.subscribe();
                    tokio::spawn(connection::serve(shared.clone(), stream, shutdown, guard));
                }
                Err(e) => {
                    // Out of file descriptors and the like: back off, retry.
                    eprintln!("thicket serve: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = shutdown.wait_for(|stop| *stop) => break,
        }
    }
    drop(listener);
    drop(alive);
    if tokio::time::timeout(DRAIN_TIMEOUT, all_closed.recv())
        .await
        .is_err()
    {
        eprintln!("thicket serve: connections still busy after {DRAIN_TIMEOUT:?}; closing them");
    }
    Ok(())
}

fn spawn_signal_handler(shared: Arc<Shared>) -> Result<(), ServerError> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut terminate = signal(SignalKind::terminate()).map_err(io_error("handling SIGTERM"))?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(io_error("handling SIGINT"))?;
    tokio::spawn(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
        shared.request_shutdown();
    });
    Ok(())
}
