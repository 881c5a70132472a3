//! One client connection: read requests, run them, write the replies.
//!
//! Requests already received are run back to back (a pipeline) and their
//! replies written together; under `appendfsync always` the replies wait
//! for the group commit first. Memory per connection is bounded: the input
//! buffer holds at most one partial argument plus one read, replies are
//! written out every `max_pipeline` requests or `max_reply_buffer` bytes,
//! and the socket write waits for the client to read (so a client that
//! never reads stops being served instead of growing the server).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use std::collections::VecDeque;

use crate::commands::{self, Ctx};
use crate::resp::RequestParser;
use crate::resp::{Args, Reply};
use crate::session::{Close, Session};
use crate::shared::Shared;

/// Bytes a read asks for when no larger argument is awaited.
const READ_CHUNK: usize = 16 << 10;

/// Serves one client until it leaves, errs, or the server shuts down.
/// `_alive` is dropped on return: the server waits for every connection's.
pub async fn serve(
    shared: Arc<Shared>,
    mut stream: TcpStream,
    mut shutdown: watch::Receiver<bool>,
    _alive: mpsc::Sender<()>,
) {
    // Small replies should not wait for Nagle's algorithm.
    let _ = stream.set_nodelay(true);
    let id = shared.next_client_id.fetch_add(1, Ordering::Relaxed);
    let mut session = Session::new(id);
    let mut parser = RequestParser::new(shared.limits.clone());
    let mut input: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut output: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut pending: VecDeque<Args> = VecDeque::new();
    let mut replies: Vec<Reply> = Vec::new();
    'connection: loop {
        let mut consumed = 0;
        let mut protocol_error = None;
        while pending.len() < shared.limits.max_pipeline {
            match parser.parse(&input[consumed..]) {
                Ok((n, request)) => {
                    consumed += n;
                    match request {
                        Some(args) => pending.push_back(args),
                        None => break,
                    }
                }
                Err(e) => {
                    protocol_error = Some(e);
                    break;
                }
            }
        }
        // Stopped at the pipeline limit: more requests may be buffered.
        let more_buffered = pending.len() == shared.limits.max_pipeline;
        // Requests received together run as a pipeline (runs of data
        // commands as one batch); replies go out every `max_reply_buffer`
        // bytes and after the last.
        while !pending.is_empty() {
            let mut ctx = Ctx {
                shared: &shared,
                session: &mut session,
            };
            commands::execute_next(&mut ctx, &mut pending, &mut replies);
            let close = session.close;
            if close == Some(Close::WithoutReply) {
                // A closing command runs alone: its reply is the last.
                replies.pop();
            }
            for reply in replies.drain(..) {
                reply.encode(session.protocol, &mut output);
            }
            if close.is_some() {
                let _ = flush(&shared, &mut session, &mut stream, &mut output).await;
                break 'connection;
            }
            if output.len() >= shared.limits.max_reply_buffer
                && flush(&shared, &mut session, &mut stream, &mut output)
                    .await
                    .is_err()
            {
                break 'connection;
            }
        }
        if let Some(e) = protocol_error {
            shared
                .metrics
                .protocol_errors
                .fetch_add(1, Ordering::Relaxed);
            output.extend_from_slice(format!("-ERR {e}\r\n").as_bytes());
            let _ = flush(&shared, &mut session, &mut stream, &mut output).await;
            break 'connection;
        }
        if flush(&shared, &mut session, &mut stream, &mut output)
            .await
            .is_err()
        {
            break;
        }
        input.drain(..consumed);
        if more_buffered {
            continue;
        }
        // Shutting down: in-flight requests are done, stop reading.
        if *shutdown.borrow() {
            break;
        }
        let wanted = parser
            .wanted(&input)
            .unwrap_or(0)
            .max(input.len() + READ_CHUNK);
        input.reserve(wanted - input.len());
        tokio::select! {
            read = stream.read_buf(&mut input) => match read {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            },
            _ = shutdown.changed() => break,
        }
    }
    shared
        .metrics
        .connections_closed
        .fetch_add(1, Ordering::Relaxed);
}

/// Writes the buffered replies, after the log sync when they acknowledge
/// writes under `appendfsync always`. A failed sync closes the connection
/// without sending them: no write is acknowledged that may be lost.
async fn flush(
    shared: &Shared,
    session: &mut Session,
    stream: &mut TcpStream,
    output: &mut Vec<u8>,
) -> Result<(), ()> {
    if std::mem::take(&mut session.wrote) && shared.durability.replies_wait() {
        if let Err(e) = shared.durability.wait_synced().await {
            eprintln!(
                "thicket serve: log sync failed, closing client {}: {e}",
                session.id
            );
            return Err(());
        }
    }
    if output.is_empty() {
        return Ok(());
    }
    let written = stream.write_all(output).await;
    output.clear();
    // A pipeline of big replies should not pin its largest buffer forever.
    if output.capacity() > 4 * shared.limits.max_reply_buffer {
        output.shrink_to(READ_CHUNK);
    }
    written.map_err(|_| ())
}
