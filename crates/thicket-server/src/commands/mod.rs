//! The command table and dispatch: arity checks, MULTI queueing, key locks
//! for writes, metrics.

mod collection;
mod expire;
mod flush;
mod hash;
mod keys;
mod list;
mod multi;
mod numbers;
mod object;
mod pipeline;
mod server;
mod set;
mod strings;
mod thicket;
mod zset;

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Instant;

use crate::resp::{Args, Reply};
use crate::session::Session;
use crate::shared::Shared;
use crate::store::{KeyLocks, Store, Txn};

pub use pipeline::execute_next;

/// A command's reply; `Err` replies are errors, so handlers can use `?`.
pub type CmdResult = Result<Reply, Reply>;
type DataFn = fn(&mut Txn, &[Vec<u8>]) -> CmdResult;
type ControlFn = fn(&mut Ctx, &[Vec<u8>]) -> CmdResult;

/// What a command touches.
pub enum Handler {
    /// Reads keys: no locks (each read sees a committed state).
    Read(DataFn),
    /// Writes keys: runs under its keys' locks and commits one batch.
    Write(DataFn),
    /// Connection or server state, or a walk over the key space.
    Control(ControlFn),
}

pub struct CommandSpec {
    pub name: &'static str,
    /// Redis's convention: N exactly, or -N for at least N (name included).
    pub arity: i32,
    pub flags: &'static [&'static str],
    /// Key positions as Redis reports them: first, last (-1: the last
    /// argument), step; 0, 0, 0 for none.
    pub first_key: i32,
    pub last_key: i32,
    pub step: i32,
    pub handler: Handler,
    /// Control commands that may be queued in MULTI (data commands always
    /// may).
    pub in_multi: bool,
    /// A write whose keys are a range, not a list: it takes every key lock.
    pub locks_all: bool,
}

impl CommandSpec {
    /// The key arguments of `args`.
    pub fn keys<'a>(&self, args: &'a [Vec<u8>]) -> impl Iterator<Item = &'a [u8]> {
        let len = args.len() as i32;
        let last = if self.last_key < 0 {
            len + self.last_key
        } else {
            self.last_key.min(len - 1)
        };
        let (first, step) = (self.first_key, self.step.max(1));
        (first..=last)
            .step_by(step as usize)
            .filter(move |_| first > 0)
            .filter_map(move |i| args.get(i as usize).map(Vec::as_slice))
    }

    fn arity_ok(&self, argc: usize) -> bool {
        let argc = argc as i32;
        if self.arity >= 0 {
            argc == self.arity
        } else {
            argc >= -self.arity
        }
    }

    /// Locks the keys of `args` (every key for a range write).
    pub fn lock<'s>(&self, store: &'s Store, args: &[Vec<u8>]) -> KeyLocks<'s> {
        lock_commands(store, &[(self, args)])
    }

    fn allowed_in_multi(&self) -> bool {
        self.in_multi || !matches!(self.handler, Handler::Control(_))
    }
}

/// Locks the keys of every command (every key when one is a range write).
pub fn lock_commands<'s, A: AsRef<[Vec<u8>]>>(
    store: &'s Store,
    commands: &[(&CommandSpec, A)],
) -> KeyLocks<'s> {
    if commands.iter().any(|(spec, _)| spec.locks_all) {
        store.lock_all()
    } else {
        store.lock(
            commands
                .iter()
                .flat_map(|(spec, args)| spec.keys(args.as_ref())),
        )
    }
}

/// What a control command may use.
pub struct Ctx<'a> {
    pub shared: &'a Shared,
    pub session: &'a mut Session,
}

const READ: &[&str] = &["readonly", "fast"];
const WRITE: &[&str] = &["write", "denyoom"];
const ADMIN: &[&str] = &["admin", "noscript"];
const CONNECTION: &[&str] = &["fast", "noscript", "loading", "stale"];

const fn data(
    name: &'static str,
    arity: i32,
    keys: (i32, i32, i32),
    handler: Handler,
) -> CommandSpec {
    let flags = match handler {
        Handler::Write(_) => WRITE,
        _ => READ,
    };
    CommandSpec {
        name,
        arity,
        flags,
        first_key: keys.0,
        last_key: keys.1,
        step: keys.2,
        handler,
        in_multi: true,
        locks_all: false,
    }
}

/// A command whose keys follow a count (`SINTERCARD numkeys key...`):
/// locked and reported as all arguments after the name, a superset.
const fn numkeys(name: &'static str, arity: i32, handler: Handler) -> CommandSpec {
    data(name, arity, (2, -1, 1), handler)
}

/// A write over a key range (`[first key, last key)`), under every lock.
const fn range_write(name: &'static str, arity: i32, handler: DataFn) -> CommandSpec {
    CommandSpec {
        locks_all: true,
        ..data(name, arity, (1, 2, 1), Handler::Write(handler))
    }
}

const fn control(
    name: &'static str,
    arity: i32,
    flags: &'static [&'static str],
    handler: ControlFn,
    in_multi: bool,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        first_key: 0,
        last_key: 0,
        step: 0,
        handler: Handler::Control(handler),
        in_multi,
        locks_all: false,
    }
}

const ONE: (i32, i32, i32) = (1, 1, 1);
const ALL: (i32, i32, i32) = (1, -1, 1);
const PAIRS: (i32, i32, i32) = (1, -1, 2);

use Handler::{Read, Write};

pub static COMMANDS: &[CommandSpec] = &[
    data("get", 2, ONE, Read(strings::get)),
    data("set", -3, ONE, Write(strings::set)),
    data("setnx", 3, ONE, Write(strings::setnx)),
    data("setex", 4, ONE, Write(expire::setex)),
    data("psetex", 4, ONE, Write(expire::psetex)),
    data("getset", 3, ONE, Write(strings::getset)),
    data("getdel", 2, ONE, Write(strings::getdel)),
    data("getex", -2, ONE, Write(expire::getex)),
    data("mget", -2, ALL, Read(strings::mget)),
    data("mset", -3, PAIRS, Write(strings::mset)),
    data("msetnx", -3, PAIRS, Write(strings::msetnx)),
    data("incr", 2, ONE, Write(strings::incr)),
    data("decr", 2, ONE, Write(strings::decr)),
    data("incrby", 3, ONE, Write(strings::incrby)),
    data("decrby", 3, ONE, Write(strings::decrby)),
    data("incrbyfloat", 3, ONE, Write(strings::incrbyfloat)),
    data("append", 3, ONE, Write(strings::append)),
    data("setrange", 4, ONE, Write(strings::setrange)),
    data("strlen", 2, ONE, Read(strings::strlen)),
    data("getrange", 4, ONE, Read(strings::getrange)),
    data("substr", 4, ONE, Read(strings::getrange)),
    data("del", -2, ALL, Write(keys::del)),
    data("unlink", -2, ALL, Write(keys::del)),
    data("exists", -2, ALL, Read(keys::exists)),
    data("type", 2, ONE, Read(keys::key_type)),
    data("rename", 3, (1, 2, 1), Write(keys::rename)),
    data("renamenx", 3, (1, 2, 1), Write(keys::renamenx)),
    data("copy", -3, (1, 2, 1), Write(keys::copy)),
    data("ttl", 2, ONE, Read(expire::ttl)),
    data("pttl", 2, ONE, Read(expire::pttl)),
    data("expiretime", 2, ONE, Read(expire::expiretime)),
    data("pexpiretime", 2, ONE, Read(expire::pexpiretime)),
    data("persist", 2, ONE, Write(expire::persist)),
    data("expire", -3, ONE, Write(expire::expire)),
    data("pexpire", -3, ONE, Write(expire::pexpire)),
    data("expireat", -3, ONE, Write(expire::expireat)),
    data("pexpireat", -3, ONE, Write(expire::pexpireat)),
    data("hset", -4, ONE, Write(hash::hset)),
    data("hmset", -4, ONE, Write(hash::hmset)),
    data("hsetnx", 4, ONE, Write(hash::hsetnx)),
    data("hget", 3, ONE, Read(hash::hget)),
    data("hmget", -3, ONE, Read(hash::hmget)),
    data("hdel", -3, ONE, Write(hash::hdel)),
    data("hgetall", 2, ONE, Read(hash::hgetall)),
    data("hkeys", 2, ONE, Read(hash::hkeys)),
    data("hvals", 2, ONE, Read(hash::hvals)),
    data("hlen", 2, ONE, Read(hash::hlen)),
    data("hexists", 3, ONE, Read(hash::hexists)),
    data("hstrlen", 3, ONE, Read(hash::hstrlen)),
    data("hincrby", 4, ONE, Write(hash::hincrby)),
    data("hincrbyfloat", 4, ONE, Write(hash::hincrbyfloat)),
    data("hrandfield", -2, ONE, Read(hash::hrandfield)),
    data("hscan", -3, ONE, Read(hash::hscan)),
    data("sadd", -3, ONE, Write(set::sadd)),
    data("srem", -3, ONE, Write(set::srem)),
    data("smembers", 2, ONE, Read(set::smembers)),
    data("sismember", 3, ONE, Read(set::sismember)),
    data("smismember", -3, ONE, Read(set::smismember)),
    data("scard", 2, ONE, Read(set::scard)),
    data("spop", -2, ONE, Write(set::spop)),
    data("srandmember", -2, ONE, Read(set::srandmember)),
    data("smove", 4, (1, 2, 1), Write(set::smove)),
    data("sinter", -2, ALL, Read(set::sinter)),
    data("sunion", -2, ALL, Read(set::sunion)),
    data("sdiff", -2, ALL, Read(set::sdiff)),
    data("sinterstore", -3, ALL, Write(set::sinterstore)),
    data("sunionstore", -3, ALL, Write(set::sunionstore)),
    data("sdiffstore", -3, ALL, Write(set::sdiffstore)),
    numkeys("sintercard", -3, Read(set::sintercard)),
    data("sscan", -3, ONE, Read(set::sscan)),
    data("zadd", -4, ONE, Write(zset::zadd)),
    data("zincrby", 4, ONE, Write(zset::zincrby)),
    data("zrem", -3, ONE, Write(zset::zrem)),
    data("zscore", 3, ONE, Read(zset::zscore)),
    data("zmscore", -3, ONE, Read(zset::zmscore)),
    data("zcard", 2, ONE, Read(zset::zcard)),
    data("zcount", 4, ONE, Read(zset::zcount)),
    data("zlexcount", 4, ONE, Read(zset::zlexcount)),
    data("zrange", -4, ONE, Read(zset::zrange)),
    data("zrangestore", -5, (1, 2, 1), Write(zset::zrangestore)),
    data("zrevrange", -4, ONE, Read(zset::zrevrange)),
    data("zrangebyscore", -4, ONE, Read(zset::zrangebyscore)),
    data("zrevrangebyscore", -4, ONE, Read(zset::zrevrangebyscore)),
    data("zrangebylex", -4, ONE, Read(zset::zrangebylex)),
    data("zrevrangebylex", -4, ONE, Read(zset::zrevrangebylex)),
    data("zrank", 3, ONE, Read(zset::zrank)),
    data("zrevrank", 3, ONE, Read(zset::zrevrank)),
    data("zpopmin", -2, ONE, Write(zset::zpopmin)),
    data("zpopmax", -2, ONE, Write(zset::zpopmax)),
    data("zremrangebyscore", 4, ONE, Write(zset::zremrangebyscore)),
    data("zremrangebyrank", 4, ONE, Write(zset::zremrangebyrank)),
    data("zremrangebylex", 4, ONE, Write(zset::zremrangebylex)),
    data("zscan", -3, ONE, Read(zset::zscan)),
    data("lpush", -3, ONE, Write(list::lpush)),
    data("rpush", -3, ONE, Write(list::rpush)),
    data("lpushx", -3, ONE, Write(list::lpushx)),
    data("rpushx", -3, ONE, Write(list::rpushx)),
    data("lpop", -2, ONE, Write(list::lpop)),
    data("rpop", -2, ONE, Write(list::rpop)),
    data("llen", 2, ONE, Read(list::llen)),
    data("lrange", 4, ONE, Read(list::lrange)),
    data("lindex", 3, ONE, Read(list::lindex)),
    data("lset", 4, ONE, Write(list::lset)),
    data("linsert", 5, ONE, Write(list::linsert)),
    data("lrem", 4, ONE, Write(list::lrem)),
    data("ltrim", 4, ONE, Write(list::ltrim)),
    data("lpos", -3, ONE, Read(list::lpos)),
    data("lmove", 5, (1, 2, 1), Write(list::lmove)),
    data("rpoplpush", 3, (1, 2, 1), Write(list::rpoplpush)),
    data("blpop", -3, (1, -2, 1), Write(list::blocking)),
    data("brpop", -3, (1, -2, 1), Write(list::blocking)),
    data("blmove", 6, (1, 2, 1), Write(list::blocking)),
    data("brpoplpush", 4, (1, 2, 1), Write(list::blocking)),
    control("scan", -2, READ, keys::scan, false),
    control("keys", 2, READ, keys::keys, false),
    control("dbsize", 1, READ, keys::dbsize, false),
    control("randomkey", 1, READ, keys::randomkey, false),
    control("object", -2, READ, object::object, true),
    control("memory", -2, READ, object::memory, false),
    control("flushdb", -1, WRITE, flush::flushdb, false),
    control("flushall", -1, WRITE, flush::flushall, false),
    control("ping", -1, CONNECTION, server::ping, true),
    control("echo", 2, CONNECTION, server::echo, true),
    control("hello", -1, CONNECTION, server::hello, false),
    control("select", 2, CONNECTION, server::select, true),
    control("quit", -1, CONNECTION, server::quit, false),
    control("info", -1, ADMIN, server::info, true),
    control("config", -2, ADMIN, server::config, true),
    control("command", -1, CONNECTION, server::command, false),
    control("client", -2, CONNECTION, server::client, false),
    control("time", 1, CONNECTION, server::time, true),
    control("shutdown", -1, ADMIN, server::shutdown, false),
    control("multi", 1, CONNECTION, multi::multi, false),
    control("watch", -2, CONNECTION, multi::watch, false),
    control("unwatch", 1, CONNECTION, multi::unwatch, false),
    control("exec", 1, CONNECTION, multi::exec, false),
    control("discard", 1, CONNECTION, multi::discard, false),
    control("thicket.range", -3, READ, thicket::range, false),
    control("thicket.stats", 1, READ, thicket::stats, false),
    range_write("thicket.delrange", 3, thicket::delrange),
    control("thicket.keyspace", -2, ADMIN, thicket::keyspace, false),
    control("thicket.select", 2, CONNECTION, thicket::select, true),
];

pub fn names() -> Vec<&'static str> {
    COMMANDS.iter().map(|c| c.name).collect()
}

pub fn lookup(name: &[u8]) -> Option<(usize, &'static CommandSpec)> {
    static INDEX: OnceLock<HashMap<&'static [u8], usize>> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        COMMANDS
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.as_bytes(), i))
            .collect()
    });
    let mut lower = [0u8; 32];
    let lowered = lower.get_mut(..name.len())?;
    lowered.copy_from_slice(name);
    lowered.make_ascii_lowercase();
    index.get(&*lowered).map(|&i| (i, &COMMANDS[i]))
}

pub fn syntax_error() -> Reply {
    Reply::error("ERR syntax error")
}

pub fn arity_error(name: &str) -> Reply {
    Reply::error(format!(
        "ERR wrong number of arguments for '{name}' command"
    ))
}

fn unknown_command(args: &[Vec<u8>]) -> Reply {
    let name = String::from_utf8_lossy(&args[0]);
    let name: String = name.chars().take(128).collect();
    let mut rest = String::new();
    for arg in &args[1..] {
        if rest.len() >= 128 {
            break;
        }
        let arg = String::from_utf8_lossy(arg);
        let room = 128 - rest.len();
        let arg: String = arg.chars().take(room).collect();
        rest.push_str(&format!("'{arg}' "));
    }
    Reply::error(format!(
        "ERR unknown command '{name}', with args beginning with: {rest}"
    ))
}

/// Runs one request and returns its reply.
pub fn execute(ctx: &mut Ctx, args: Args) -> Reply {
    let started = Instant::now();
    let Some((index, spec)) = lookup(&args[0]) else {
        if let Some(multi) = &mut ctx.session.multi {
            multi.aborted = true;
        }
        let reply = unknown_command(&args);
        ctx.shared.metrics.record(None, started.elapsed(), true);
        return reply;
    };
    let reply = if !spec.arity_ok(args.len()) {
        if let Some(multi) = &mut ctx.session.multi {
            multi.aborted = true;
        }
        arity_error(spec.name)
    } else if ctx.session.multi.is_some()
        && !matches!(spec.name, "exec" | "discard" | "multi" | "quit" | "watch")
    {
        multi::queue(ctx, spec, args)
    } else {
        run(ctx, spec, &args)
    };
    ctx.shared
        .metrics
        .record(Some(index), started.elapsed(), reply.is_error());
    reply
}

/// Runs a command outside a transaction.
fn run(ctx: &mut Ctx, spec: &CommandSpec, args: &[Vec<u8>]) -> Reply {
    let store = &ctx.shared.store;
    let database = &ctx.session.database;
    let result = match spec.handler {
        Handler::Control(f) => f(ctx, args),
        Handler::Read(f) => f(&mut Txn::new(store, database), args),
        Handler::Write(f) => {
            let _locks = spec.lock(store, args);
            let mut txn = Txn::new(store, database);
            // A command that fails writes nothing.
            match f(&mut txn, args) {
                Ok(reply) => match txn.commit() {
                    Ok(wrote) => {
                        if wrote {
                            if spec.locks_all {
                                store.touch_all();
                            }
                            store.touch(spec.keys(args));
                            ctx.session.wrote = true;
                            ctx.shared.durability.note_write();
                        }
                        Ok(reply)
                    }
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            }
        }
    };
    result.unwrap_or_else(|e| e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_lowercase() {
        let mut seen = std::collections::HashSet::new();
        for c in COMMANDS {
            assert!(seen.insert(c.name), "{} twice", c.name);
            assert_eq!(c.name, c.name.to_lowercase());
            assert!(c.name.len() <= 32);
        }
        assert_eq!(lookup(b"GeT").map(|(_, c)| c.name), Some("get"));
        assert!(lookup(&[b'a'; 100]).is_none());
    }

    #[test]
    fn key_positions() {
        let args: Vec<Vec<u8>> = ["mset", "a", "1", "b", "2"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        let (_, mset) = lookup(b"mset").unwrap();
        assert_eq!(mset.keys(&args).collect::<Vec<_>>(), [b"a", b"b"]);
        let (_, set) = lookup(b"set").unwrap();
        assert_eq!(set.keys(&args).collect::<Vec<_>>(), [b"a"]);
        let (_, ping) = lookup(b"ping").unwrap();
        assert_eq!(ping.keys(&args).count(), 0);
    }

    #[test]
    fn a_range_write_takes_every_key_lock_alone_and_in_multi() {
        let dir = tempfile::tempdir().unwrap();
        let db = thicketdb::Db::open(dir.path(), thicketdb::Options::default()).unwrap();
        let store = Store::new(db).unwrap();
        let words =
            |w: &[&str]| -> Vec<Vec<u8>> { w.iter().map(|s| s.as_bytes().to_vec()).collect() };
        let delrange = (
            lookup(b"THICKET.DELRANGE").unwrap().1,
            words(&["thicket.delrange", "a", "b"]),
        );
        let set = (lookup(b"set").unwrap().1, words(&["set", "k", "v"]));
        let locks = delrange.0.lock(&store, &delrange.1);
        assert_eq!(store.locked_stripes(), crate::store::STRIPES);
        drop(locks);
        let locks = set.0.lock(&store, &set.1);
        assert_eq!(store.locked_stripes(), 1);
        drop(locks);
        let locks = lock_commands(&store, &[set.clone(), delrange]);
        assert_eq!(
            store.locked_stripes(),
            crate::store::STRIPES,
            "a MULTI holding one"
        );
        drop(locks);
        let _locks = lock_commands(&store, &[set]);
        assert_eq!(store.locked_stripes(), 1);
    }

    #[test]
    fn unknown_command_text_matches_redis() {
        let args = vec![b"foo".to_vec(), b"a".to_vec(), b"b".to_vec()];
        assert_eq!(
            unknown_command(&args),
            Reply::error("ERR unknown command 'foo', with args beginning with: 'a' 'b' ")
        );
    }
}
