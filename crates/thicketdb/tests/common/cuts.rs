//! One store operation (a flush, a compaction, a merge, a trim...) cut
//! short at every fallible file-system operation it performs, then a
//! power loss or a process crash; the store that opens afterwards holds
//! every write made before the operation (the history oracle: the writes
//! were synced, or flushed, before it began), reads them back by scan and
//! by point reads, finishes or redoes the operation and checks clean.
//! Used by `tests/triad_fault.rs` (TRIAD's flushes and log-table
//! compactions) and `tests/power_loss.rs` (SifrDB's journaled merges,
//! LSbM's trims, BoLT's compaction files, YoDB's splits).

use std::sync::Arc;

use thicketdb::check::check_store_with_fs;
use thicketdb::io::fault::{FaultFs, FaultKind};
use thicketdb::{Db, Options, Result};

use super::{diff, fault_dir, open_fault, scan_model, Model};

/// Fallible file-system operations so far (what `fail_after_ops` counts).
pub fn fault_ops(fs: &FaultFs) -> u64 {
    let s = fs.stats();
    s.creates + s.appends + s.flushes + s.syncs + s.dir_syncs + s.renames
}

/// Ends the process that runs `db`: a power loss (`drop_unsynced`) or a
/// process crash; the faults injected into it end with it.
pub fn end_process(fs: &FaultFs, db: Db, power_loss: bool) {
    if power_loss {
        fs.drop_unsynced();
    } else {
        fs.crash_process();
    }
    drop(db);
    fs.clear_faults();
}

/// An operation to cut, and how to set it up.
pub struct Cut<'a> {
    /// What the operation is, for messages.
    pub name: &'a str,
    /// The options every open uses.
    pub options: Options,
    /// Opens a store on the file system and writes to it, returning it
    /// with the model of its writes. When the flag is set (a power loss
    /// follows) every write must be durable before the operation starts:
    /// written with `sync`, or flushed.
    pub prepare: &'a dyn Fn(&FaultFs, bool) -> (Db, Model),
    /// The operation cut short.
    pub act: &'a dyn Fn(&Db) -> Result<()>,
    /// Asserts that the operation, run without faults, did what the test
    /// is about (by the engine's counters, or the files it left).
    pub acted: &'a dyn Fn(&FaultFs, &Db),
    /// Extra checks on the store recovered after a cut (with a message
    /// naming the cut).
    pub recovered: &'a dyn Fn(&FaultFs, &Db, &str),
    /// For an operation that makes writes durable (an asynchronous
    /// checkpoint): the store with them, which a cut may leave instead of
    /// `prepare`'s model (the writes made durable before it).
    pub or_completed: Option<&'a Model>,
}

/// Runs `cut.act` once without faults to count its file-system operations
/// (checking `cut.acted`), then for every count `at` up to that, on a fresh
/// store: fails the operation's `at`-th operation with an I/O error, loses
/// power (`drop_unsynced`) or crashes the process (`crash_process`), and
/// reopens to `prepare`'s model (or `or_completed`). Returns the number of operations the fault-free run made.
pub fn cut_at_every_op(cut: &Cut) -> u64 {
    let total = {
        let fs = FaultFs::new();
        let (db, _) = (cut.prepare)(&fs, false);
        let before = fault_ops(&fs);
        (cut.act)(&db).unwrap_or_else(|e| panic!("{}: without faults: {e}", cut.name));
        (cut.acted)(&fs, &db);
        fault_ops(&fs) - before
    };
    assert!(total > 1, "{}: {total} operations", cut.name);
    for at in 0..=total {
        for power_loss in [true, false] {
            let fs = FaultFs::new();
            let (db, model) = (cut.prepare)(&fs, power_loss);
            fs.fail_after_ops(at, FaultKind::Io);
            let failed = (cut.act)(&db).is_err();
            end_process(&fs, db, power_loss);
            let what = format!(
                "{}: fault after {at} of {total} ops (failed: {failed}), power loss: {power_loss}",
                cut.name
            );
            let db = open_fault(&fs, cut.options.clone())
                .unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
            let got = scan_model(&db).unwrap_or_else(|e| panic!("{what}: scan: {e}"));
            let model = match cut.or_completed {
                Some(completed) if &got == completed => completed.clone(),
                _ => model,
            };
            assert!(got == model, "{what}: {}", diff(&got, &model));
            for (key, value) in &model {
                let read = db.get(key).unwrap_or_else(|e| panic!("{what}: get: {e}"));
                assert_eq!(read.as_ref(), Some(value), "{what}");
            }
            (cut.recovered)(&fs, &db, &what);
            // A second life: the operation again (or what is left of it).
            (cut.act)(&db).unwrap_or_else(|e| panic!("{what}: the operation again: {e}"));
            assert!(
                scan_model(&db).unwrap() == model,
                "{what}: after the operation ran again"
            );
            db.close().unwrap();
            let db = open_fault(&fs, cut.options.clone()).unwrap();
            assert!(
                scan_model(&db).unwrap() == model,
                "{what}: after a second reopen"
            );
            db.close().unwrap();
            check_store_with_fs(&fault_dir(), Arc::new(fs.clone()))
                .unwrap_or_else(|e| panic!("{what}: check: {e}"));
        }
    }
    total
}
