//! The ThicketDB extensions: THICKET.RANGE, THICKET.DELRANGE,
//! THICKET.KEYSPACE, THICKET.SELECT and THICKET.STATS.

use thicketdb::{Profile, ReadOptions, Stats};

use super::numbers::int_arg;
use super::{syntax_error, CmdResult, Ctx};
use crate::resp::Reply;
use crate::store::{companion_name, engine_error, is_companion, Database, Space, Txn};

/// `THICKET.RANGE start end [LIMIT n] [REV]`: the keys in `[start, end)`
/// (an empty `end`: no upper bound) with their values, in key order or
/// reversed, as a map (a flat key, value array in RESP2).
pub fn range(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    let max = ctx.shared.limits.max_reply_keys;
    let mut limit = None;
    let mut reverse = false;
    let mut i = 3;
    while i < args.len() {
        match args[i].to_ascii_uppercase().as_slice() {
            b"LIMIT" if i + 1 < args.len() => {
                let n = usize::try_from(int_arg(&args[i + 1])?)
                    .ok()
                    .filter(|&n| n <= max)
                    .ok_or_else(|| {
                        Reply::error(format!("ERR LIMIT must be between 0 and {max}"))
                    })?;
                limit = Some(n);
                i += 2;
            }
            b"REV" => {
                reverse = true;
                i += 1;
            }
            _ => return Err(syntax_error()),
        }
    }
    let opts = ReadOptions {
        lower_bound: Some(args[1].clone()),
        upper_bound: (!args[2].is_empty()).then(|| args[2].clone()),
        fill_cache: false,
        ..ReadOptions::default()
    };
    let Some(mut iter) = ctx.shared.store.iter(&ctx.session.database, opts)? else {
        return Ok(Reply::Map(Vec::new()));
    };
    if reverse {
        iter.seek_to_last();
    } else {
        iter.seek_to_first();
    }
    let cap = limit.unwrap_or(max);
    let mut pairs = Vec::new();
    while iter.valid() && pairs.len() < cap {
        pairs.push((Reply::bulk(iter.key()), Reply::bulk(iter.value())));
        if reverse {
            iter.prev();
        } else {
            iter.next();
        }
    }
    iter.status().map_err(engine_error)?;
    if limit.is_none() && iter.valid() {
        return Err(Reply::error(format!(
            "ERR THICKET.RANGE would return more than {max} keys; add LIMIT"
        )));
    }
    Ok(Reply::Map(pairs))
}

/// `THICKET.DELRANGE start end`: deletes every key in `[start, end)` of the
/// selected database with one range tombstone (RocksDB's `DeleteRange`),
/// however many keys the range holds. Replies 1 when it wrote the
/// tombstone, 0 for an empty range (`start >= end`).
pub fn delrange(txn: &mut Txn, args: &[Vec<u8>]) -> CmdResult {
    let (start, end) = (&args[1], &args[2]);
    if end.is_empty() {
        return Err(Reply::error(
            "ERR thicket: THICKET.DELRANGE needs a non-empty end key",
        ));
    }
    if start >= end {
        return Ok(Reply::Int(0));
    }
    txn.delete_range(Space::Main, start, Some(end))?;
    // Typed keys in the range too. Their members do not follow the user
    // keys' order, so they stay behind, unreachable (docs/format.md).
    txn.delete_range(Space::Meta, start, Some(end))?;
    Ok(Reply::Int(1))
}

/// `THICKET.KEYSPACE CREATE name [PROFILE p] [OPTION name value]...`,
/// `THICKET.KEYSPACE DROP name`, `THICKET.KEYSPACE LIST`: named keyspaces
/// of the store (`THICKET.SELECT` works in one).
pub fn keyspace(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    let db = ctx.shared.store.db();
    let name = || {
        let name = args.get(2).ok_or_else(syntax_error)?;
        user_keyspace_name(name)
    };
    match args[1].to_ascii_uppercase().as_slice() {
        b"CREATE" => {
            let name = name()?;
            let mut options = db.options().clone();
            let mut rest = args[3..].iter();
            while let Some(word) = rest.next() {
                let mut value = || {
                    rest.next()
                        .map(|v| String::from_utf8_lossy(v))
                        .ok_or_else(syntax_error)
                };
                match word.to_ascii_uppercase().as_slice() {
                    b"PROFILE" => {
                        let profile: Profile = value()?.parse().map_err(engine_error)?;
                        options = profile.options();
                    }
                    b"OPTION" => {
                        let option = value()?.into_owned();
                        options.set(&option, &value()?).map_err(engine_error)?;
                    }
                    _ => return Err(syntax_error()),
                }
            }
            // A companion left by a drop outside the server must not lend
            // its old typed keys to the new keyspace.
            if matches!(
                db.keyspace(name),
                Err(thicketdb::Error::KeyspaceNotFound(_))
            ) {
                drop_companion(ctx, name)?;
            }
            db.create_keyspace(name, options).map_err(engine_error)?;
            Ok(Reply::OK)
        }
        b"DROP" if args.len() == 3 => {
            let name = name()?;
            db.drop_keyspace(name).map_err(engine_error)?;
            drop_companion(ctx, name)?;
            Ok(Reply::OK)
        }
        b"LIST" if args.len() == 2 => Ok(Reply::Array(
            db.list_keyspaces()
                .into_iter()
                .filter(|name| !is_companion(name))
                .map(Reply::bulk)
                .collect(),
        )),
        _ => Err(syntax_error()),
    }
}

/// A keyspace name a client may use: UTF-8 and not a companion's.
fn user_keyspace_name(name: &[u8]) -> Result<&str, Reply> {
    let name = std::str::from_utf8(name)
        .map_err(|_| Reply::error("ERR thicket: a keyspace name must be UTF-8"))?;
    if is_companion(name) {
        return Err(Reply::error(
            "ERR thicket: keyspaces named thicket-types:... are the server's own",
        ));
    }
    Ok(name)
}

/// Drops the companion of keyspace `name` (its typed keys), if any.
fn drop_companion(ctx: &mut Ctx, name: &str) -> Result<(), Reply> {
    let db = ctx.shared.store.db();
    match db.drop_keyspace(&companion_name(name)) {
        Ok(()) | Err(thicketdb::Error::KeyspaceNotFound(_)) => Ok(()),
        Err(e) => Err(engine_error(e)),
    }
}

/// `THICKET.SELECT name`: later commands of the connection work in the
/// existing keyspace `name` (`SELECT index` goes back to a numbered one).
pub fn select(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    let name = user_keyspace_name(&args[1])?;
    let database = Database::Named(name.to_string());
    ctx.shared.store.keyspace(&database)?;
    ctx.session.database = database;
    Ok(Reply::OK)
}

/// The engine's statistics as name, value pairs (THICKET.STATS and INFO's
/// `# Thicket` section).
pub fn stats_fields(s: &Stats) -> Vec<(&'static str, String)> {
    let join = |values: &[u64]| {
        values
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    let hit_ratio = s.block_cache_hit_ratio();
    let tables: Vec<u64> = s.tables_per_level.iter().map(|&n| n as u64).collect();
    vec![
        (
            "write_amplification",
            format!("{:.3}", s.write_amplification),
        ),
        ("user_writes", s.user_writes.to_string()),
        ("user_bytes_written", s.user_bytes_written.to_string()),
        ("write_groups", s.write_groups.to_string()),
        ("engine_bytes_written", s.engine_bytes_written.to_string()),
        ("log_bytes_written", s.log_bytes_written.to_string()),
        ("flush_bytes_written", s.flush_bytes_written.to_string()),
        (
            "compaction_bytes_written",
            s.compaction_bytes_written.to_string(),
        ),
        ("compaction_bytes_read", s.compaction_bytes_read.to_string()),
        ("flushes", s.flushes.to_string()),
        ("compactions_merge", s.compactions_merge.to_string()),
        ("compactions_move", s.compactions_move.to_string()),
        ("stall_micros", s.stall_micros.to_string()),
        ("fsyncs", s.fsyncs.to_string()),
        ("fsyncs_log", s.fsyncs_log.to_string()),
        ("block_cache_hits", s.block_cache_hits.to_string()),
        ("block_cache_misses", s.block_cache_misses.to_string()),
        ("block_cache_hit_ratio", format!("{hit_ratio:.4}")),
        ("block_cache_bytes", s.block_cache_bytes.to_string()),
        ("memtables", s.memtables.to_string()),
        ("tables", s.tables.to_string()),
        ("tables_per_level", join(&tables)),
        ("bytes_per_level", join(&s.bytes_per_level)),
        ("live_table_bytes", s.live_table_bytes.to_string()),
        ("last_sequence", s.last_sequence.to_string()),
        (
            "background_error",
            s.background_error.clone().unwrap_or_default(),
        ),
    ]
}

pub fn stats(ctx: &mut Ctx, _args: &[Vec<u8>]) -> CmdResult {
    let stats = ctx.shared.store.db().stats();
    Ok(Reply::Map(
        stats_fields(&stats)
            .into_iter()
            .map(|(name, value)| (Reply::bulk(name), Reply::bulk(value)))
            .collect(),
    ))
}
