//! MULTI, EXEC, DISCARD: the queued commands run under the locks of all
//! their keys and commit as one engine batch, so other clients see all of
//! the transaction's writes or none, across a SELECT too (the databases are
//! keyspaces of one store). WATCH remembers each key's lock stripe's
//! write count: EXEC fails when one moved (a write to that key, or rarely
//! to another key of the stripe) or when a watched key has expired since.

use super::{lock_commands, CmdResult, CommandSpec, Ctx, Handler};
use crate::resp::{Args, Reply};
use crate::session::{Multi, Watched};
use crate::store::Txn;

pub fn watch(ctx: &mut Ctx, args: &[Vec<u8>]) -> CmdResult {
    if ctx.session.multi.is_some() {
        return Err(Reply::error("ERR WATCH inside MULTI is not allowed"));
    }
    let store = &ctx.shared.store;
    for key in &args[1..] {
        // The count first: a write after it shows as a change.
        let touched = store.touched(key);
        let flushes = store.flushes();
        let expire_at = Txn::new(store, &ctx.session.database)
            .lookup(key)?
            .map(|meta| meta.expire_at);
        ctx.session.watched.push(Watched {
            key: key.clone(),
            touched,
            flushes,
            expire_at,
        });
    }
    Ok(Reply::OK)
}

pub fn unwatch(ctx: &mut Ctx, _args: &[Vec<u8>]) -> CmdResult {
    ctx.session.watched.clear();
    Ok(Reply::OK)
}

pub fn multi(ctx: &mut Ctx, _args: &[Vec<u8>]) -> CmdResult {
    if ctx.session.multi.is_some() {
        return Err(Reply::error("ERR MULTI calls can not be nested"));
    }
    ctx.session.multi = Some(Multi::default());
    Ok(Reply::OK)
}

pub fn discard(ctx: &mut Ctx, _args: &[Vec<u8>]) -> CmdResult {
    ctx.session.watched.clear();
    match ctx.session.multi.take() {
        Some(_) => Ok(Reply::OK),
        None => Err(Reply::error("ERR DISCARD without MULTI")),
    }
}

/// Queues a command inside MULTI.
pub fn queue(ctx: &mut Ctx, spec: &'static CommandSpec, args: Args) -> Reply {
    let limit = ctx.shared.limits.max_multi_queue;
    let Some(multi) = &mut ctx.session.multi else {
        return Reply::error("ERR queue without MULTI");
    };
    if !spec.allowed_in_multi() {
        multi.aborted = true;
        return Reply::error("ERR Command not allowed inside a transaction");
    }
    if multi.queue.len() >= limit {
        multi.aborted = true;
        return Reply::error(format!("ERR thicket: MULTI holds at most {limit} commands"));
    }
    multi.queue.push((spec, args));
    Reply::Simple("QUEUED")
}

pub fn exec(ctx: &mut Ctx, _args: &[Vec<u8>]) -> CmdResult {
    let Some(multi) = ctx.session.multi.take() else {
        return Err(Reply::error("ERR EXEC without MULTI"));
    };
    let watched = std::mem::take(&mut ctx.session.watched);
    if multi.aborted {
        return Err(Reply::error(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    let shared = ctx.shared;
    let store = &shared.store;
    // The watched keys' locks too: no write to them between the check and
    // the commit.
    let _locks = if multi.queue.iter().any(|(spec, _)| spec.locks_all) {
        lock_commands(store, &multi.queue)
    } else {
        store.lock(
            multi
                .queue
                .iter()
                .flat_map(|(spec, args)| spec.keys(args))
                .chain(watched.iter().map(|w| w.key.as_slice())),
        )
    };
    let mut txn = Txn::new(store, &ctx.session.database);
    let now = txn.now;
    for w in &watched {
        let expired_since = w.expire_at.is_some_and(|at| at != 0 && at <= now);
        let flushed = w.expire_at.is_some() && store.flushes() != w.flushes;
        if store.touched(&w.key) != w.touched || expired_since || flushed {
            return Ok(Reply::NilArray);
        }
    }
    let mut replies = Vec::with_capacity(multi.queue.len());
    for (spec, args) in &multi.queue {
        let result = match spec.handler {
            Handler::Read(f) | Handler::Write(f) => {
                // A queued SELECT has run: later commands use its database,
                // in the same batch.
                txn.select(&ctx.session.database);
                f(&mut txn, args)
            }
            Handler::Control(f) => f(ctx, args),
        };
        replies.push(result.unwrap_or_else(|e| e));
    }
    if txn.commit()? {
        for (spec, args) in &multi.queue {
            if matches!(spec.handler, Handler::Write(_)) {
                store.touch(spec.keys(args));
            }
            if spec.locks_all {
                store.touch_all();
            }
        }
        ctx.session.wrote = true;
        shared.durability.note_write();
    }
    Ok(Reply::Array(replies))
}
