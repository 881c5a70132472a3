//! FLUSHDB and FLUSHALL: one atomic write under every key lock: per
//! keyspace (a database's and its companion), a range tombstone from the empty key to its last key, and a
//! delete of that key. Every store `thicket serve` opens has range
//! deletions (both layouts, in byte order).

use thicketdb::{Keyspace, ReadOptions, WriteBatch};

use super::{syntax_error, CmdResult, Ctx};
use crate::resp::Reply;
use crate::store::{engine_error, Store};

/// FLUSHDB: deletes every key of the selected database.
pub fn flushdb(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    check_mode(args)?;
    let store = &ctx.shared.store;
    let database = &ctx.session.database;
    let keyspaces: Vec<Keyspace> = store
        .keyspace(database)?
        .into_iter()
        .chain(store.companion(database)?)
        .collect();
    flush(ctx, &keyspaces)
}

/// FLUSHALL: deletes every key of every database, numbered and named (every
/// keyspace of the store, companions included).
pub fn flushall(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    check_mode(args)?;
    let db = ctx.shared.store.db();
    // One dropped meanwhile has nothing left to delete.
    let keyspaces: Vec<Keyspace> = db
        .list_keyspaces()
        .iter()
        .filter_map(|name| db.keyspace(name).ok())
        .collect();
    flush(ctx, &keyspaces)
}

/// `ASYNC` and `SYNC` are accepted (both synchronous here).
fn check_mode(args: &[Vec<u8>]) -> Result<(), Reply> {
    match args.get(1).map(|a| a.to_ascii_uppercase()) {
        None => Ok(()),
        Some(mode) if args.len() == 2 && (mode == b"ASYNC" || mode == b"SYNC") => Ok(()),
        Some(_) => Err(syntax_error()),
    }
}

fn flush(ctx: &mut Ctx, keyspaces: &[Keyspace]) -> CmdResult {
    delete_ranges(&ctx.shared.store, keyspaces)?;
    ctx.shared.store.note_flush();
    ctx.session.wrote = true;
    ctx.shared.durability.note_write();
    Ok(Reply::OK)
}

/// Every key of `keyspaces` in one write. Under every key lock no other
/// command writes, so nothing lands beyond the last key read.
fn delete_ranges(store: &Store, keyspaces: &[Keyspace]) -> Result<(), Reply> {
    let _locks = store.lock_all();
    let mut batch = WriteBatch::new();
    for keyspace in keyspaces {
        let opts = ReadOptions {
            fill_cache: false,
            ..ReadOptions::default()
        };
        let mut iter = keyspace.iter(opts).map_err(engine_error)?;
        iter.seek_to_last();
        iter.status().map_err(engine_error)?;
        if iter.valid() {
            let last = iter.key();
            batch
                .delete_range_in(keyspace, b"", last)
                .and_then(|()| batch.delete_in(keyspace, last))
                .map_err(engine_error)?;
        }
    }
    store.db().write(batch).map_err(engine_error)
}
