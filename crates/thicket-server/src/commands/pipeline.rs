//! Pipelined requests as one engine batch: a run of data commands that a
//! client sent together (outside MULTI) runs under the locks of all their
//! keys in one transaction and commits as one write, so N pipelined SETs
//! cost one trip through the engine's write queue and log instead of N.
//! Each command still sees the writes of the ones before it (the
//! transaction's overlay), replies keep their order, and a command that
//! fails writes nothing: when any command of a run fails, nothing of the
//! run has been committed, and the run is executed again one command at a
//! time, exactly as without batching.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::{execute, lock_commands, lookup, CommandSpec, Ctx, Handler};
use crate::resp::{Args, Reply};
use crate::store::Txn;

/// Most commands one batch takes: their key locks are held until it
/// commits, so a long run would hold many stripes at once.
const MAX_RUN: usize = 64;

/// Runs the request at the front of `pending`, or the longest run of
/// batchable requests there (at most `MAX_RUN`), appending their replies to
/// `replies` in order. A command that closes the connection is run alone.
pub fn execute_next(ctx: &mut Ctx, pending: &mut VecDeque<Args>, replies: &mut Vec<Reply>) {
    let run_len = pending
        .iter()
        .take(MAX_RUN)
        .take_while(|args| batchable(ctx, args).is_some())
        .count();
    let has_write = pending.iter().take(run_len).any(|args| {
        batchable(ctx, args).is_some_and(|(_, spec)| matches!(spec.handler, Handler::Write(_)))
    });
    if run_len >= 2 && has_write {
        let run: Vec<Args> = pending.drain(..run_len).collect();
        match run_batched(ctx, &run) {
            Some(batched) => replies.extend(batched),
            None => {
                ctx.shared
                    .metrics
                    .pipeline_batch_retries
                    .fetch_add(1, Ordering::Relaxed);
                replies.extend(run.into_iter().map(|args| execute(ctx, args)))
            }
        }
        return;
    }
    if let Some(args) = pending.pop_front() {
        replies.push(execute(ctx, args));
    }
}

/// A data command with its keys listed (not a range write), of the right
/// arity, outside MULTI: it may join a batch.
fn batchable(ctx: &Ctx, args: &Args) -> Option<(usize, &'static CommandSpec)> {
    if ctx.session.multi.is_some() {
        return None;
    }
    let (index, spec) = lookup(args.first()?)?;
    let data = matches!(spec.handler, Handler::Read(_) | Handler::Write(_));
    (data && !spec.locks_all && spec.arity_ok(args.len())).then_some((index, spec))
}

/// Runs `run` as one transaction; `None` (nothing written) when a command
/// of it fails or the commit does, so the caller runs it unbatched.
fn run_batched(ctx: &mut Ctx, run: &[Args]) -> Option<Vec<Reply>> {
    let started = Instant::now();
    let specs: Vec<(usize, &'static CommandSpec)> = run
        .iter()
        .map(|args| batchable(ctx, args))
        .collect::<Option<_>>()?;
    let store = &ctx.shared.store;
    let locked: Vec<(&CommandSpec, &Args)> = specs.iter().map(|(_, s)| *s).zip(run).collect();
    let _locks = lock_commands(store, &locked);
    let mut txn = Txn::new(store, &ctx.session.database);
    let mut replies = Vec::with_capacity(run.len());
    for ((_, spec), args) in specs.iter().zip(run) {
        let (Handler::Read(f) | Handler::Write(f)) = spec.handler else {
            return None;
        };
        replies.push(f(&mut txn, args).ok()?);
    }
    if txn.commit().ok()? {
        for ((_, spec), args) in specs.iter().zip(run) {
            if matches!(spec.handler, Handler::Write(_)) {
                store.touch(spec.keys(args));
            }
        }
        ctx.session.wrote = true;
        ctx.shared.durability.note_write();
    }
    let metrics = &ctx.shared.metrics;
    metrics.pipeline_batches.fetch_add(1, Ordering::Relaxed);
    metrics
        .pipeline_batched_commands
        .fetch_add(run.len() as u64, Ordering::Relaxed);
    // Each command's latency is the run's: its write is acknowledged with
    // the whole batch.
    let elapsed = started.elapsed();
    for ((index, _), reply) in specs.iter().zip(&replies) {
        ctx.shared
            .metrics
            .record(Some(*index), elapsed, reply.is_error());
    }
    Some(replies)
}
