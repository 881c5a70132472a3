//! Power loss (and a process crash) at every fallible file-system
//! operation of the profiles' own mechanisms: a SifrDB journaled merge, an
//! LSbM buffered compaction and trim, a BoLT compaction file and a YoDB
//! chunk split and asynchronous checkpoint; every LSM profile's flush and
//! compaction, and every profile's checkpoint copy. Each is cut at its n-th operation for every n, then the
//! store reopens and must hold exactly the writes made before the
//! operation, all of them durable (`common/cuts.rs`), resume or redo the
//! operation, and check clean.

mod common;

use common::cuts::{cut_at_every_op, Cut};
use common::*;
use thicketdb::io::fault::FaultFs;
use thicketdb::FileSystem;
use thicketdb::{Db, Options, Profile, WriteOptions};

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    let mut v = format!("v{i}.{round}.").into_bytes();
    v.resize(60 + (i % 7) as usize * 10, b'a' + (round % 26) as u8);
    v
}

/// Opens a store and writes `rounds` rounds of `keys` overlapping keys
/// (every round rewrites a third of the previous ones and deletes a few),
/// each round flushed: L0 (or the chunks) hold every write, durably.
fn flushed_rounds(fs: &FaultFs, options: &Options, rounds: u32, keys: u32) -> (Db, Model) {
    let db = open_fault(fs, options.clone()).unwrap();
    let mut model = Model::new();
    for round in 0..rounds {
        let mut ops: Vec<Op> = (0..keys)
            .filter(|i| round == 0 || i % 3 == round % 3)
            .map(|i| (key(i), Some(value(i, round))))
            .collect();
        ops.extend(
            (0..keys)
                .filter(|i| i % (13 + round) == 5)
                .map(|i| (key(i), None)),
        );
        for op in ops.chunks(20) {
            db.write(batch_of(op)).unwrap();
            apply(&mut model, op);
        }
        db.flush().unwrap();
    }
    (db, model)
}

/// Options where only `compact_range` compacts: L0 keeps every run.
fn held(options: Options) -> Options {
    options
        .write_buffer_size(256 << 10)
        .target_table_size(4 << 10)
        .block_size(1024)
        .disable_auto_compactions(true)
        .l0_compaction_trigger(1000)
        .l0_slowdown_writes_trigger(1000)
        .l0_stop_writes_trigger(1000)
}

/// SifrDB's journaled merge of L0's runs, checkpointed every two tables:
/// cut anywhere (an output table, a checkpoint's MANIFEST edit, the final
/// edit), the reopened store resumes the merge from its journal or starts
/// it again, and reads exactly what was written throughout.
#[test]
fn a_journaled_merge_keeps_every_write_across_a_power_loss_at_any_point() {
    let options = held(Profile::Sifr.options())
        .early_cleaning_threshold(2)
        .runs_per_level(1000);
    let total = cut_at_every_op(&Cut {
        name: "sifr journaled merge",
        options: options.clone(),
        prepare: &|fs, _| flushed_rounds(fs, &options, 3, 400),
        act: &|db| db.compact_range(None, None),
        acted: &|_, db| {
            let stats = db.stats();
            assert!(stats.merge_checkpoints >= 3, "checkpointed: {stats:?}");
            assert!(!stats.merge_in_progress, "{stats:?}");
        },
        recovered: &|_, _, _| {},
        or_completed: None,
    });
    eprintln!("sifr journaled merge: {total} operations");
}

/// LSbM's options: small levels, no block cache (so every buffer table
/// is trimmable), a trim only when asked; on fixed level targets or on
/// dynamic level sizing (L0 compacting into a base level below L1).
fn lsbm_options(dynamic: bool) -> Options {
    let options = tiny_tree(Profile::Lsbm.options(), 0)
        .dynamic_level_bytes(dynamic)
        .level_size_multiplier(10)
        .block_cache_size(0)
        .lsbm_trim_threshold(1.0)
        .lsbm_trim_interval(3_600_000);
    held(options)
}

/// LSbM: a manual compaction that merges L0 into L1's run (on dynamic
/// level sizing, the base level's) and edits the compaction buffer (the
/// tables it replaced appended to that level's buffer, which freezes on
/// the repeated data and drops them), cut anywhere.
#[test]
fn a_buffered_compaction_keeps_every_write_across_a_power_loss_at_any_point() {
    for dynamic in [false, true] {
        buffered_compaction_cut_anywhere(dynamic);
    }
}

fn buffered_compaction_cut_anywhere(dynamic: bool) {
    let options = lsbm_options(dynamic);
    let removed_before = std::cell::Cell::new(0);
    let prepare = |fs: &FaultFs, _| {
        let (db, mut model) = flushed_rounds(fs, &options, 2, 300);
        db.compact_range(None, None).unwrap();
        for i in (0..300).step_by(2) {
            db.put(key(i), value(i, 7)).unwrap();
            model.insert(key(i), value(i, 7));
        }
        db.flush().unwrap();
        removed_before.set(db.stats().buffer_tables_removed);
        (db, model)
    };
    let total = cut_at_every_op(&Cut {
        name: if dynamic {
            "lsbm buffered compaction, dynamic levels"
        } else {
            "lsbm buffered compaction"
        },
        options: options.clone(),
        prepare: &prepare,
        act: &|db| db.compact_range(None, None),
        acted: &|_, db| {
            let stats = db.stats();
            assert!(
                stats.buffer_tables_removed > removed_before.get(),
                "buffer edited: {stats:?}"
            );
        },
        recovered: &|_, _, _| {},
        or_completed: None,
    });
    eprintln!("lsbm buffered compaction (dynamic {dynamic}): {total} operations");
}

/// LSbM: a trim (Algorithm 2) removing the buffer's uncached tables and
/// releasing their space, cut anywhere.
#[test]
fn a_buffer_trim_keeps_every_write_across_a_power_loss_at_any_point() {
    for dynamic in [false, true] {
        buffer_trim_cut_anywhere(dynamic);
    }
}

fn buffer_trim_cut_anywhere(dynamic: bool) {
    let options = lsbm_options(dynamic);
    let prepare = |fs: &FaultFs, _| {
        let db = open_fault(fs, options.clone()).unwrap();
        let mut model = Model::new();
        let mut put_in_steps = |keys: &mut dyn Iterator<Item = (Vec<u8>, Vec<u8>)>| {
            let keys: Vec<_> = keys.collect();
            for step in keys.chunks(256) {
                for (k, v) in step {
                    db.put(k, v).unwrap();
                    model.insert(k.clone(), v.clone());
                }
                db.flush().unwrap();
                db.compact_range(None, None).unwrap();
            }
        };
        put_in_steps(&mut (0..1200).map(|i| (key(i), value(i, 1))));
        put_in_steps(&mut (0..600).map(|i| (format!("z{i:05}").into_bytes(), value(i, 2))));
        put_in_steps(&mut (0..600).map(|i| (format!("y{i:05}").into_bytes(), value(i, 3))));
        // The first trim spares the tables appended since the one before
        // (here: since open): the one cut trims them.
        db.trim_compaction_buffer().unwrap();
        let stats = db.stats();
        assert!(stats.buffer_tables > 0, "{stats:?}");
        (db, model)
    };
    let total = cut_at_every_op(&Cut {
        name: if dynamic {
            "lsbm trim, dynamic levels"
        } else {
            "lsbm trim"
        },
        options: options.clone(),
        prepare: &prepare,
        act: &|db| db.trim_compaction_buffer(),
        acted: &|_, db| {
            let stats = db.stats();
            assert!(stats.buffer_tables_trimmed > 0, "trimmed: {stats:?}");
        },
        recovered: &|_, _, _| {},
        or_completed: None,
    });
    eprintln!("lsbm trim (dynamic {dynamic}): {total} operations");
}

/// BoLT: a compaction writes its output tables into one compaction file
/// (logical tables sharing a segment); cut anywhere in the file's writes,
/// its sync or the MANIFEST edit naming its tables.
#[test]
fn a_compaction_file_keeps_every_write_across_a_power_loss_at_any_point() {
    let options = held(Profile::Bolt.options());
    let total = cut_at_every_op(&Cut {
        name: "bolt compaction file",
        options: options.clone(),
        prepare: &|fs, _| flushed_rounds(fs, &options, 3, 400),
        act: &|db| db.compact_range(None, None),
        acted: &|fs, db| {
            let stats = db.stats();
            let segments = fault_files(fs, ".seg").len();
            assert!(
                (segments as u64) < stats.tables as u64,
                "{segments} segments for {} tables: no compaction file",
                stats.tables
            );
        },
        recovered: &|_, _, _| {},
        or_completed: None,
    });
    eprintln!("bolt compaction file: {total} operations");
}

/// YoDB: a manual compaction rebalances the one chunk holding every key,
/// which splits it; cut anywhere in the new funks' tables, the chunk list
/// or the logs' switch.
#[test]
fn a_chunk_split_keeps_every_write_across_a_power_loss_at_any_point() {
    let mut options = Profile::YoDb.options();
    options.chunk_size = 8 << 10;
    options.block_size = 512;
    options.funk_log_limit = 1 << 20;
    options.funk_log_limit_with_munk = 1 << 20;
    options.munk_cache_bytes = 0;
    options.row_cache_bytes = 0;
    options.chunk_rebalance_threads = 0;
    let prepare = |fs: &FaultFs, sync: bool| {
        let db = open_fault(fs, options.clone()).unwrap();
        let mut model = Model::new();
        for i in 0..300 {
            db.put_opt(key(i), value(i, 0), WriteOptions { sync })
                .unwrap();
            model.insert(key(i), value(i, 0));
        }
        assert_eq!(db.stats().chunks, 1, "no split before the compaction");
        (db, model)
    };
    let total = cut_at_every_op(&Cut {
        name: "yodb chunk split",
        options: options.clone(),
        prepare: &prepare,
        act: &|db| db.compact_range(None::<&[u8]>, None::<&[u8]>),
        acted: &|_, db| {
            let stats = db.stats();
            assert!(stats.chunk_splits > 0, "split: {stats:?}");
            assert!(stats.chunks > 2, "{stats:?}");
        },
        recovered: &|_, _, _| {},
        or_completed: None,
    });
    eprintln!("yodb chunk split: {total} operations");
}

/// `flushed_rounds`, then more writes left in the memtable, synced.
fn synced_tail(fs: &FaultFs, options: &Options) -> (Db, Model) {
    let (db, mut model) = flushed_rounds(fs, options, 2, 200);
    let ops: Vec<Op> = (0..200)
        .step_by(3)
        .map(|i| (key(i), Some(value(i, 9))))
        .collect();
    for op in ops.chunks(20) {
        db.write_opt(batch_of(op), WriteOptions { sync: true })
            .unwrap();
        apply(&mut model, op);
    }
    (db, model)
}

/// Every LSM profile's own flush (TRIAD's log tables, BoLT's compaction
/// files, the forests' runs...) and then its full compaction, each cut
/// anywhere.
#[test]
fn every_lsm_profile_s_flush_and_compaction_keep_every_write_across_a_power_loss_at_any_point() {
    let lsm = Profile::ALL
        .iter()
        .filter(|p| p.options().layout == thicketdb::Layout::Lsm);
    for profile in lsm {
        let options = held(profile.options());
        let flush = format!("{profile} flush");
        cut_at_every_op(&Cut {
            name: &flush,
            options: options.clone(),
            prepare: &|fs, _| synced_tail(fs, &options),
            act: &|db| db.flush(),
            acted: &|_, db| {
                assert_eq!(db.stats().flushes, 3, "{profile}: the third flush ran");
            },
            recovered: &|_, _, _| {},
            or_completed: None,
        });
        let compaction = format!("{profile} compaction");
        cut_at_every_op(&Cut {
            name: &compaction,
            options: options.clone(),
            prepare: &|fs, _| flushed_rounds(fs, &options, 3, 200),
            act: &|db| db.compact_range(None, None),
            acted: &|_, db| {
                assert!(db.stats().compactions_merge > 0, "{profile}: merged");
            },
            recovered: &|_, _, _| {},
            or_completed: None,
        });
    }
}

/// A checkpoint of every profile's store cut anywhere leaves the store it
/// copies whole (and the store reopens, resumes and checks clean as after
/// any cut).
#[test]
fn a_checkpoint_cut_anywhere_leaves_its_store_whole() {
    for profile in Profile::ALL {
        let options = held(profile.options());
        // A new target each time: a cut after the final rename leaves a
        // whole checkpoint, which a second one into the same place must
        // not replace.
        let taken = std::cell::Cell::new(0);
        let name = format!("{profile} checkpoint");
        cut_at_every_op(&Cut {
            name: &name,
            options: options.clone(),
            prepare: &|fs, _| synced_tail(fs, &options),
            act: &|db| {
                taken.set(taken.get() + 1);
                db.checkpoint(format!("copies/checkpoint-{}", taken.get()))
                    .map(|_| ())
            },
            acted: &|fs, _| {
                let dir = format!("copies/checkpoint-{}", taken.get());
                let root = match profile.options().layout {
                    thicketdb::Layout::Lsm => "CURRENT",
                    thicketdb::Layout::Chunked => "CHUNKS",
                };
                assert!(
                    fs.exists(&std::path::Path::new(&dir).join(root)),
                    "{profile}: the checkpoint was written: {:?}",
                    fs.file_names()
                );
            },
            recovered: &|_, _, _| {},
            or_completed: None,
        });
    }
}

/// YoDB's asynchronous mode (§3.5): a checkpoint syncs the chunk logs
/// holding writes since the last one and records its point in
/// `CHECKPOINT`. Cut anywhere, the store opens at the last checkpoint or
/// at this one, never between: a cross-chunk batch is whole or absent.
#[test]
fn an_asynchronous_checkpoint_cut_anywhere_opens_at_one_checkpoint_or_the_next() {
    let mut options = Profile::YoDb.options();
    options.durability = thicketdb::Durability::Async;
    options.checkpoint_interval = 3_600_000;
    options.chunk_size = 8 << 10;
    options.block_size = 512;
    options.chunk_rebalance_threads = 0;
    // Writes after the first checkpoint: batches that span chunks.
    let later: Vec<Op> = (0..300)
        .step_by(2)
        .map(|i| (key(i), (i % 10 != 4).then(|| value(i, 1))))
        .collect();
    let split_and_checkpointed = |fs: &FaultFs| {
        let (db, model) = flushed_rounds(fs, &options, 1, 300);
        db.compact_range(None::<&[u8]>, None::<&[u8]>).unwrap();
        db.flush().unwrap();
        assert!(db.stats().chunks > 2, "the batches span chunks");
        (db, model)
    };
    let checkpoints_before = std::cell::Cell::new(0);
    let prepare = |fs: &FaultFs, _| {
        let (db, model) = split_and_checkpointed(fs);
        checkpoints_before.set(db.stats().chunk_checkpoints);
        for op in later.chunks(25) {
            db.write(batch_of(op)).unwrap();
        }
        (db, model)
    };
    let completed = {
        let fs = FaultFs::new();
        let (db, mut model) = split_and_checkpointed(&fs);
        drop(db);
        apply(&mut model, &later);
        model
    };
    let total = cut_at_every_op(&Cut {
        name: "yodb asynchronous checkpoint",
        options: options.clone(),
        prepare: &prepare,
        act: &|db| db.flush(),
        acted: &|_, db| {
            let stats = db.stats();
            assert_eq!(
                stats.chunk_checkpoints,
                checkpoints_before.get() + 1,
                "{stats:?}"
            );
        },
        recovered: &|_, _, _| {},
        or_completed: Some(&completed),
    });
    eprintln!("yodb asynchronous checkpoint: {total} operations");
}
