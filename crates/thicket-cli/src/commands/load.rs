//! `load`: writes generated keys, one write per key, and reports progress as
//! `acked N` lines so a crash test can learn the last acknowledged key.

use std::io::Write;
use std::time::{Duration, Instant};

use thicketdb::WriteOptions;

use super::{open_keyspace, Access, Status};
use crate::cli::{GlobalArgs, LoadArgs};
use crate::error::{CliError, CliResult};
use crate::keys::{key_into, value_into};
use crate::permutation::permutation;

/// Keys between two `acked N` lines at most.
const PROGRESS_EVERY: u64 = 10_000;
/// Slow (e.g. synced) loads also report every this many keys once
/// `PROGRESS_INTERVAL` has passed since the last line.
const PROGRESS_CHECK: u64 = 100;
const PROGRESS_INTERVAL: Duration = Duration::from_millis(50);

pub fn run(g: &GlobalArgs, args: &LoadArgs) -> CliResult<Status> {
    if args.start.checked_add(args.count).is_none() {
        return Err(CliError::Usage("--start + --count overflows".to_string()));
    }
    let order = args
        .random
        .then(|| permutation(args.start, args.count, args.seed));
    let (db, ks) = open_keyspace(g, &args.keyspace, Access::Create)?;
    let opts = WriteOptions { sync: args.sync };
    let mut out = std::io::stdout().lock();
    let mut key = Vec::with_capacity(32);
    let mut value = Vec::with_capacity(args.value_size);
    let started = Instant::now();
    let mut last_report = started;
    let mut reported = 0;
    for n in 0..args.count {
        let i = match &order {
            Some(order) => order[n as usize],
            None => args.start + n,
        };
        key_into(&mut key, i);
        value_into(&mut value, i, args.value_size);
        ks.put_opt(&key, &value, opts)?;
        let done = n + 1;
        if done % PROGRESS_CHECK == 0
            && (done % PROGRESS_EVERY == 0 || last_report.elapsed() >= PROGRESS_INTERVAL)
        {
            writeln!(out, "acked {done}")?;
            out.flush()?;
            last_report = Instant::now();
            reported = done;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    if reported != args.count || args.count == 0 {
        writeln!(out, "acked {}", args.count)?;
        out.flush()?;
    }
    drop(ks);
    db.close()?;
    let rate = if elapsed > 0.0 {
        args.count as f64 / elapsed
    } else {
        0.0
    };
    writeln!(
        out,
        "loaded {} keys in {elapsed:.3} s: {rate:.0} writes/s",
        args.count
    )?;
    out.flush()?;
    Ok(Status::Success)
}
