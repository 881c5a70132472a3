//! MULTI, EXEC, DISCARD: the queued commands run under the locks of all
//! their keys and commit as one engine batch, so other clients see all of
//! the transaction's writes or none, across a SELECT too (the databases are
//! keyspaces of one store). (WATCH is not offered.)

use super::{lock_commands, CmdResult, CommandSpec, Ctx, Handler};
use crate::resp::{Args, Reply};
use crate::session::Multi;
use crate::store::Txn;

pub fn multi(ctx: &mut Ctx, _args: &[Vec<u8>]) -> CmdResult {
    if ctx.session.multi.is_some() {
        return Err(Reply::error("ERR MULTI calls can not be nested"));
    }
    ctx.session.multi = Some(Multi::default());
    Ok(Reply::OK)
}

pub fn discard(ctx: &mut Ctx, _args: &[Vec<u8>]) -> CmdResult {
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
        return Reply::error(format!(
            "ERR thicket: '{}' is not supported inside MULTI",
            spec.name
        ));
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
    if multi.aborted {
        return Err(Reply::error(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    let shared = ctx.shared;
    let store = &shared.store;
    let _locks = lock_commands(store, &multi.queue);
    let mut txn = Txn::multi(store, &ctx.session.database);
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
        ctx.session.wrote = true;
        shared.durability.note_write();
    }
    Ok(Reply::Array(replies))
}
