//! SifrDB's parallel search (§4.3): the candidate tables of a point lookup
//! (one per run whose key range and filter admit the key) are probed by a
//! pool of search threads, newest first, and the caller returns as soon as
//! the newest candidate that can hold the key has answered. The first seek
//! of a range read positions its sources in parallel the same way.

mod pool;
mod query;
mod seek;

pub(crate) use pool::SearchPool;
pub(crate) use query::Query;

#[cfg(test)]
mod lookup_tests;
