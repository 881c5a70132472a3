//! `scan`: `key<TAB>value` lines within bounds, in either direction.

use std::io::{BufWriter, Write};

use thicketdb::ReadOptions;

use super::{open_keyspace, Access, Status};
use crate::cli::{GlobalArgs, ScanArgs};
use crate::error::CliResult;

pub fn run(g: &GlobalArgs, args: &ScanArgs) -> CliResult<Status> {
    let (db, ks) = open_keyspace(g, &args.keyspace, Access::ReadOnly)?;
    let mut iter = ks.iter(ReadOptions {
        lower_bound: args.from.as_ref().map(|k| k.as_bytes().to_vec()),
        upper_bound: args.to.as_ref().map(|k| k.as_bytes().to_vec()),
        ..ReadOptions::default()
    })?;
    let limit = args.limit.unwrap_or(u64::MAX);
    let mut out = BufWriter::new(std::io::stdout().lock());
    if args.reverse {
        iter.seek_to_last();
    } else {
        iter.seek_to_first();
    }
    let mut printed = 0u64;
    while iter.valid() && printed < limit {
        out.write_all(iter.key())?;
        out.write_all(b"\t")?;
        out.write_all(iter.value())?;
        out.write_all(b"\n")?;
        printed += 1;
        if args.reverse {
            iter.prev();
        } else {
            iter.next();
        }
    }
    iter.status()?;
    out.flush()?;
    drop((iter, ks));
    db.close()?;
    Ok(Status::Success)
}
