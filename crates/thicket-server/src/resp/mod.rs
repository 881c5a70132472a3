//! The Redis serialization protocol: requests in, replies out.

pub mod parse;
pub mod reply;

pub use parse::{Args, ProtocolError, RequestParser};
pub use reply::{Protocol, Reply};
