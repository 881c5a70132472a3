//! What one client may make the server hold. Each limit bounds memory or
//! work per connection; `docs/server.md` lists them.

/// Per-connection limits. The defaults suit a server with a few thousand
/// clients; tests shrink them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Longest bulk argument (Redis's `proto-max-bulk-len`), bytes. Values
    /// are also bounded by the engine's `MAX_VALUE_SIZE`.
    pub max_bulk_len: usize,
    /// Most arguments in one request.
    pub max_multibulk_len: usize,
    /// Longest inline request line, bytes.
    pub max_inline_len: usize,
    /// Largest request (its arguments plus a small charge per argument):
    /// what one request can make the server buffer.
    pub max_request_bytes: usize,
    /// Requests executed from one read before their replies are written;
    /// a client that does not read replies stalls itself, not the server.
    pub max_pipeline: usize,
    /// Reply bytes buffered before they are written out.
    pub max_reply_buffer: usize,
    /// Commands queued in one MULTI.
    pub max_multi_queue: usize,
    /// Keys one KEYS or THICKET.RANGE reply may hold (SCAN has no limit:
    /// its COUNT is capped by this too).
    pub max_reply_keys: usize,
    /// Open client connections; further ones get an error and are closed.
    pub max_clients: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_bulk_len: 64 << 20,
            max_multibulk_len: 1 << 20,
            max_inline_len: 64 << 10,
            max_request_bytes: 128 << 20,
            max_pipeline: 1024,
            max_reply_buffer: 1 << 20,
            max_multi_queue: 10_000,
            max_reply_keys: 1_000_000,
            max_clients: 10_000,
        }
    }
}
