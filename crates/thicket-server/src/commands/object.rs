//! OBJECT and MEMORY USAGE: introspection Redis clients and tools call.
//! Values here have one storage format, so OBJECT ENCODING reports the
//! encoding Redis 7.0 would give the value as it is now (by its size and
//! element lengths under the encoding parameters of CONFIG SET); Redis
//! never converts a big encoding back when a value shrinks, this does.

use super::numbers::parse_i64;
use super::{CmdResult, Ctx};
use crate::meta::{Body, Kind, Meta};
use crate::resp::Reply;
use crate::store::Txn;

fn unknown(args: &[Vec<u8>], command: &str) -> Reply {
    Reply::error(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {command} HELP.",
        String::from_utf8_lossy(&args[1])
    ))
}

/// `OBJECT ENCODING key`, `OBJECT REFCOUNT key` (1: values are not
/// shared), `OBJECT HELP`.
pub fn object(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    let sub = args[1].to_ascii_uppercase();
    match (sub.as_slice(), args.len()) {
        (b"ENCODING", 3) => encoding(ctx, &args[2]),
        (b"REFCOUNT", 3) => {
            let mut txn = Txn::new(&ctx.shared.store, &ctx.session.database);
            Ok(match txn.lookup(&args[2])? {
                Some(_) => Reply::Int(1),
                None => Reply::Nil,
            })
        }
        (b"HELP", 2) => Ok(Reply::Array(vec![
            Reply::Simple("OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"),
            Reply::Simple("ENCODING <key>"),
            Reply::Simple("    The encoding Redis would use for the value of <key>."),
            Reply::Simple("REFCOUNT <key>"),
            Reply::Simple("    Always 1: values are not shared."),
        ])),
        _ => Err(unknown(args, "OBJECT")),
    }
}

fn encoding(ctx: &mut Ctx, key: &[u8]) -> CmdResult {
    let tunables = &ctx.shared.tunables;
    let mut txn = Txn::new(&ctx.shared.store, &ctx.session.database);
    txn.pin_snapshot();
    let Some(meta) = txn.lookup(key)? else {
        return Ok(Reply::Nil);
    };
    let c = match meta.body {
        Body::String(value) => {
            return Ok(Reply::bulk(
                if value.len() <= 20 && parse_i64(&value).is_some() {
                    "int"
                } else if value.len() <= 44 {
                    "embstr"
                } else {
                    "raw"
                },
            ));
        }
        Body::Collection(_, c) => c,
    };
    let kind = meta.kind();
    let (max_entries, max_value, small, big) = match kind {
        Kind::Hash => (
            tunables.get("hash-max-listpack-entries"),
            tunables.get("hash-max-listpack-value"),
            "listpack",
            "hashtable",
        ),
        Kind::ZSet => (
            tunables.get("zset-max-listpack-entries"),
            tunables.get("zset-max-listpack-value"),
            "listpack",
            "skiplist",
        ),
        Kind::Set => (
            tunables.get("set-max-intset-entries"),
            i64::MAX,
            "intset",
            "hashtable",
        ),
        Kind::List | Kind::String => return Ok(Reply::bulk("quicklist")),
    };
    if c.size as i64 > max_entries {
        return Ok(Reply::bulk(big));
    }
    let members = txn.members(key, &c, b"")?;
    let fits = |bytes: &[u8]| bytes.len() as i64 <= max_value;
    let small_enough = match kind {
        Kind::Hash => members.iter().all(|(f, v)| fits(f) && fits(v)),
        // Member parts `0x00 member` are the members; skip the score index.
        Kind::ZSet => members
            .iter()
            .filter_map(|(m, _)| m.strip_prefix(&[0u8]))
            .all(fits),
        _ => members.iter().all(|(m, _)| parse_i64(m).is_some()),
    };
    Ok(Reply::bulk(if small_enough { small } else { big }))
}

/// `MEMORY USAGE key [SAMPLES n]`: the bytes the key's entries hold in the
/// engine before compression (keys and values), a stand-in for Redis's
/// memory use.
pub fn memory(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    if !args[1].eq_ignore_ascii_case(b"USAGE") || args.len() < 3 {
        return Err(unknown(args, "MEMORY"));
    }
    let key = &args[2];
    let mut txn = Txn::new(&ctx.shared.store, &ctx.session.database);
    txn.pin_snapshot();
    let Some(meta) = txn.lookup(key)? else {
        return Ok(Reply::Nil);
    };
    let mut bytes = key.len() + meta_len(&meta);
    if let Body::Collection(_, c) = &meta.body {
        bytes += txn
            .members(key, c, b"")?
            .iter()
            .map(|(m, v)| key.len() + 12 + m.len() + v.len())
            .sum::<usize>();
    }
    Ok(Reply::Int(bytes as i64))
}

fn meta_len(meta: &Meta) -> usize {
    match &meta.body {
        Body::String(value) if meta.expire_at == 0 => value.len(),
        _ => meta.encode().len(),
    }
}
