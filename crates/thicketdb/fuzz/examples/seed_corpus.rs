//! Writes the seed corpus: `cargo run --example seed_corpus -- corpus`.
//! Every seed is a valid encoding made by the engine itself, so the fuzzer
//! starts from deep inside each decoder.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use thicketdb::format::internal_key::{InternalKey, ValueKind};
use thicketdb::format::range_tombstone::{Fragments, RangeTombstone};
use thicketdb::io::fault::FaultFs;
use thicketdb::io::FileSystem;
use thicketdb::log::{LogAddress, LogReader, LogWriter, RecoveryMode, ValueAddress};
use thicketdb::table::{
    BlockBuilder, BloomBuilder, HyperLogLog, TableBuilder, TableOptions, FOOTER_LEN,
};
use thicketdb::{Db, Options, Profile, WriteBatch};

fn write(root: &Path, target: &str, name: &str, data: &[u8]) {
    let dir = root.join(target);
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join(name), data).expect("write seed");
}

fn prefixed(tag: u8, data: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    out.extend_from_slice(data);
    out
}

/// A `log_random_access` input: flags, the offset to read, the log.
fn addressed(flags: u8, offset: u64, log: &[u8]) -> Vec<u8> {
    let mut out = vec![flags];
    out.extend_from_slice(&offset.to_le_bytes());
    out.extend_from_slice(log);
    out
}

/// A log whose second record spans two blocks and whose fourth spans
/// three; returns it and its record offsets.
fn spanning_log() -> (Vec<u8>, Vec<u64>) {
    let fs = FaultFs::new();
    let path = PathBuf::from("spanning.log");
    let mut writer = LogWriter::new(fs.create(&path).expect("create"));
    let offsets = [100, 40_000, 5, 70_000]
        .iter()
        .map(|&len| {
            let record: Vec<u8> = (0..len).map(|i: u32| (i % 251) as u8).collect();
            writer.add_record(&record).expect("append")
        })
        .collect();
    writer.flush().expect("flush");
    (fs.read_to_vec(&path).expect("read"), offsets)
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// A store with tables, a MANIFEST and a non-empty log.
fn store() -> Vec<(String, Vec<u8>)> {
    let fs = FaultFs::new();
    let dir = Path::new(thicketdb_fuzz::STORE_DIR);
    let options = Options::default()
        .write_buffer_size(64 << 10)
        .target_table_size(8 << 10)
        .block_size(512)
        // Its flushes write log tables (TRIAD-LOG): the MANIFEST records
        // them, the store keeps their logs.
        .triad_log(true);
    let db = Db::open_with_fs(dir, options, Arc::new(fs.clone())).expect("open");
    for i in 0..400 {
        db.put(&key(i), format!("value-{i}").as_bytes())
            .expect("put");
    }
    db.flush().expect("flush");
    for i in (0..400).step_by(3) {
        db.delete(&key(i)).expect("delete");
    }
    db.compact_range(None, None).expect("compact");
    let mut batch = WriteBatch::new();
    batch.put(b"batch-a", b"1").expect("batch");
    batch.delete(b"batch-b").expect("batch");
    db.write(batch).expect("write");
    db.put(b"unflushed", b"in the log").expect("put");
    fs.crash_process();
    drop(db);
    files_of(&fs, dir)
}

/// A chunked store (YoDB) with split chunks, funk tables, chunk logs and
/// a batch log, left as a process crash leaves it.
fn chunked_store() -> Vec<(String, Vec<u8>)> {
    let fs = FaultFs::new();
    let dir = Path::new(thicketdb_fuzz::STORE_DIR);
    let mut options = Profile::YoDb.options();
    options.chunk_size = 4 << 10;
    options.funk_log_limit = 2 << 10;
    options.block_size = 512;
    let db = Db::open_with_fs(dir, options, Arc::new(fs.clone())).expect("open");
    for i in 0..300 {
        db.put(&key(i), format!("value-{i}").as_bytes())
            .expect("put");
    }
    let mut batch = WriteBatch::new();
    batch.put(key(1), b"batch").expect("batch");
    batch.delete(key(299)).expect("batch");
    db.write(batch).expect("write");
    fs.crash_process();
    drop(db);
    files_of(&fs, dir)
}

/// Every file of `dir` but `LOCK`, with its content.
fn files_of(fs: &FaultFs, dir: &Path) -> Vec<(String, Vec<u8>)> {
    fs.list(dir)
        .expect("list")
        .into_iter()
        .filter(|name| name != "LOCK")
        .map(|name| {
            let data = fs.read_to_vec(&dir.join(&name)).expect("read");
            (name, data)
        })
        .collect()
}

/// A `log_entry` input: flags, the address's length, the address, the log.
fn log_entry(address: &ValueAddress, log: &[u8]) -> Vec<u8> {
    let mut encoded = Vec::new();
    address.encode_to(&mut encoded);
    let mut out = vec![1, encoded.len() as u8];
    out.extend_from_slice(&encoded);
    out.extend_from_slice(log);
    out
}

/// A table, or with `log_refs` a log table whose values are addresses.
fn table(log_refs: Option<Vec<u64>>) -> Vec<u8> {
    let fs = FaultFs::new();
    let path = PathBuf::from("t.seg");
    let mut file = fs.create(&path).expect("create");
    let options = TableOptions {
        block_size: 256,
        restart_interval: 4,
        bloom_bits_per_key: 10,
        compression: thicketdb::table::CompressionType::None,
        log_refs,
        ..TableOptions::DEFAULT
    };
    let mut builder = TableBuilder::new(&options, &mut *file);
    for i in 0..60 {
        let kind = if i % 7 == 0 {
            ValueKind::Deletion
        } else {
            ValueKind::Value
        };
        let k = InternalKey::new(&key(i), 1000 - u64::from(i), kind);
        let mut value = format!("v{i}").into_bytes();
        if options.log_refs.is_some() && kind == ValueKind::Value {
            value.clear();
            ValueAddress {
                record: LogAddress::new(1, u64::from(i) * 40),
                offset: 12,
                len: 3,
            }
            .encode_to(&mut value);
        }
        builder.add(k.encoded(), &value).expect("add");
    }
    builder.finish().expect("finish");
    file.sync().expect("sync");
    fs.read_to_vec(&path).expect("read")
}

fn main() {
    let root = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "corpus".into()));
    let chunked = chunked_store();
    write(
        &root,
        "open_store",
        "seed-chunked-store",
        &thicketdb_fuzz::encode_files(&chunked),
    );
    for (name, data) in &chunked {
        if name == "CHUNKS" {
            write(&root, "chunk_list", "seed-chunks", &prefixed(0, data));
            write(&root, "chunk_list", "seed-fixed-chunks", &prefixed(1, data));
        }
        if name == "LOGS_CLOSED" {
            write(&root, "closed_logs", "seed-closed", &prefixed(0, data));
            write(&root, "closed_logs", "seed-fixed-closed", &prefixed(1, data));
        }
        if name.ends_with(".clog") || name.ends_with(".blog") {
            write(&root, "log_reader", &format!("seed-{name}"), &prefixed(0, data));
        }
    }
    let files = store();
    write(
        &root,
        "open_store",
        "seed-store",
        &thicketdb_fuzz::encode_files(&files),
    );
    for (name, data) in &files {
        let fs = FaultFs::new();
        let path = PathBuf::from(name);
        if name.ends_with(".log") || name.starts_with("MANIFEST") {
            write(
                &root,
                "log_reader",
                &format!("seed-{name}"),
                &prefixed(0, data),
            );
            write(
                &root,
                "log_reader",
                &format!("seed-fixed-{name}"),
                &prefixed(1, data),
            );
            fs.write_durably(&path, data).expect("write");
            let mut reader = LogReader::new(
                fs.open_sequential(&path).expect("open"),
                path.clone(),
                RecoveryMode::TolerateTailCorruption,
            );
            let mut n = 0;
            let mut last_offset = 0;
            while let Some((offset, record)) = reader.read_record().expect("read") {
                if name.starts_with("MANIFEST") {
                    write(&root, "version_edit", &format!("seed-{n}"), &record);
                }
                last_offset = offset;
                n += 1;
            }
            write(
                &root,
                "log_random_access",
                &format!("seed-{name}"),
                &addressed(0, last_offset, data),
            );
        }
        if name == "OPTIONS" {
            write(&root, "options", "seed-options", &prefixed(0, data));
            write(&root, "options", "seed-fixed-options", &prefixed(1, data));
        }
    }
    let (log, offsets) = spanning_log();
    for (name, offset) in [("two", offsets[1]), ("three", offsets[3])] {
        write(
            &root,
            "log_random_access",
            &format!("seed-spanning-{name}-blocks"),
            &addressed(1, offset, &log),
        );
    }
    for (name, offset, len) in [("in-one-block", 10, 200), ("across-blocks", 32_000, 2_000)] {
        let address = ValueAddress {
            record: LogAddress::new(1, offsets[1]),
            offset,
            len,
        };
        write(
            &root,
            "log_entry",
            &format!("seed-{name}"),
            &log_entry(&address, &log),
        );
    }
    let address = ValueAddress {
        record: LogAddress::new(1, offsets[3]),
        offset: 10,
        len: 69_000,
    };
    write(
        &root,
        "log_entry",
        "seed-three-blocks",
        &log_entry(&address, &log),
    );
    let log_table = table(Some(vec![1]));
    write(&root, "table", "seed-log-table", &prefixed(0, &log_table));
    let table = table(None);
    write(&root, "table", "seed-table", &prefixed(0, &table));
    let mut block = BlockBuilder::new(4);
    for i in 0..20 {
        let k = InternalKey::new(&key(i), u64::from(i) + 1, ValueKind::Value);
        block.add(k.encoded(), b"block value");
    }
    write(&root, "block", "seed-block", &prefixed(12, block.finish()));
    let footer = &table[table.len() - FOOTER_LEN..];
    write(&root, "table_meta", "seed-footer", &prefixed(0, footer));
    write(&root, "table_meta", "seed-handle", &[1, 0x80, 0x01, 0x20]);
    let props = thicketdb::table::TableProperties::default().encode();
    write(&root, "table_meta", "seed-properties", &prefixed(2, &props));
    let mut bloom = BloomBuilder::new(10);
    for i in 0..50 {
        bloom.add(&key(i));
    }
    write(
        &root,
        "table_meta",
        "seed-bloom",
        &prefixed(3, &bloom.finish()),
    );
    let tombstone = |start: &str, end: &str, seq| RangeTombstone {
        start: start.into(),
        end: end.into(),
        seq,
    };
    let seeds = [
        ("one", vec![tombstone("b", "d", 7)]),
        (
            "stacked",
            vec![
                tombstone("a", "e", 5),
                tombstone("c", "g", 9),
                tombstone("k", "k\0", 3),
            ],
        ),
    ];
    for (name, tombstones) in seeds {
        let block = Fragments::fragment(&tombstones).encode();
        write(&root, "range_del_block", &format!("seed-{name}"), &block);
    }
    let mut hll = HyperLogLog::new();
    for i in 0..500 {
        hll.add(&key(i));
    }
    let mut out = Vec::new();
    hll.encode_to(&mut out);
    write(&root, "table_meta", "seed-hll", &prefixed(4, &out));
}
