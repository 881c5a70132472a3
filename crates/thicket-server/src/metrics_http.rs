//! The Prometheus endpoint: `GET /metrics` over HTTP/1.x on its own port;
//! one request per connection.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::shared::Shared;

/// Longest request head read.
const MAX_REQUEST: usize = 8 << 10;
/// A scraper gets this long to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

pub async fn serve(
    shared: Arc<Shared>,
    listener: TcpListener,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    tokio::spawn(answer(shared.clone(), stream));
                }
            }
            _ = shutdown.changed() => return,
        }
    }
}

async fn answer(shared: Arc<Shared>, mut stream: TcpStream) {
    let mut request = Vec::with_capacity(1024);
    let head = tokio::time::timeout(REQUEST_TIMEOUT, async {
        loop {
            let mut chunk = [0u8; 1024];
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            request.extend_from_slice(&chunk[..n]);
            if request.windows(4).any(|w| w == b"\r\n\r\n") {
                return Some(());
            }
            if request.len() > MAX_REQUEST {
                return None;
            }
        }
    })
    .await;
    if !matches!(head, Ok(Some(()))) {
        return;
    }
    let line = request.split(|&b| b == b'\n').next().unwrap_or_default();
    let mut parts = line.split(|&b| b == b' ');
    let (method, path) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let (status, content_type, body) = if method == b"GET" && (path == b"/metrics" || path == b"/")
    {
        (
            "200 OK",
            "text/plain; version=0.0.4",
            shared.render_metrics(),
        )
    } else {
        (
            "404 Not Found",
            "text/plain",
            "not found; try /metrics\n".to_string(),
        )
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}
