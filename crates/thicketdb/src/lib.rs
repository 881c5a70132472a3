//! ThicketDB: a persistent, ordered, write-optimized key-value store.
//!
//! See `DESIGN.md` for the layering; each module below is one layer.

pub mod error;
pub mod format;
pub mod io;
pub mod iterator;
pub mod log;
pub mod table;

pub use error::{Error, Result};
