//! `dump`: decodes the MANIFEST (the default), one live table
//! (`--table SEGMENT:OFFSET`) or one log (`--log N`), as text or one JSON
//! object (`--json`, keys in README.md). Reads only (`thicketdb::dump`).
//! A chunked store's metadata is its `CHUNKS` file, its tables are funk
//! tables (`--table NUMBER:0`) and its logs chunk and batch logs.
//!
//! Byte strings (keys, values) are printed escaped: printable UTF-8 as is,
//! control characters as `\u{..}`, other bytes as `\xNN`.

use std::io::Write;

use serde_json::{json, Map, Value};
use thicketdb::dump::{
    ChunkListDump, Entry, Fragment, IndexEntry, LogDump, ManifestDump, ManifestRecord,
    RangeTombstone, TableDump, TablePlace,
};
use thicketdb::format::internal_key::ParsedKey;
use thicketdb::format::ValueKind;
use thicketdb::version::edit::{DeletedTable, NewTable, VersionEdit};
use thicketdb::version::lsbm_buffer::BufferRecording;
use thicketdb::version::meta::TableMeta;
use thicketdb::{Layout, Printable};

use super::{db_dir, Status};
use crate::cli::{DumpArgs, GlobalArgs};
use crate::error::{CliError, CliResult};

pub fn run(g: &GlobalArgs, args: &DumpArgs) -> CliResult<Status> {
    let dir = db_dir(g)?;
    let (json, text) = if let Some(spec) = &args.table {
        let (segment, offset) = parse_table(spec)?;
        let dump = thicketdb::dump::table(dir, segment, offset)?;
        (table_json(&dump), table_text(&dump))
    } else if let Some(number) = args.log {
        let dump = thicketdb::dump::log(dir, number)?;
        (log_json(&dump), log_text(&dump))
    } else if thicketdb::dump::layout(dir)? == Layout::Chunked {
        let dump = thicketdb::dump::chunk_list(dir)?;
        (chunk_list_json(&dump), chunk_list_text(&dump))
    } else {
        let dump = thicketdb::dump::manifest(dir)?;
        (manifest_json(&dump), manifest_text(&dump))
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{json}")?;
    } else {
        out.write_all(text.as_bytes())?;
    }
    out.flush()?;
    Ok(Status::Success)
}

fn parse_table(spec: &str) -> CliResult<(u64, u64)> {
    spec.split_once(':')
        .and_then(|(s, o)| Some((s.parse().ok()?, o.parse().ok()?)))
        .ok_or_else(|| {
            CliError::Usage(format!(
                "bad --table {spec:?}: expected SEGMENT:OFFSET (numbers)"
            ))
        })
}

fn bytes(b: &[u8]) -> String {
    Printable(b).to_string()
}

fn kind(kind: ValueKind) -> String {
    format!("{kind:?}").to_lowercase()
}

/// An encoded internal key as `{key, sequence, kind}`; an undecodable one
/// as its escaped bytes.
fn internal_key_json(encoded: &[u8]) -> Value {
    match ParsedKey::parse(encoded) {
        Some(p) => json!({
            "key": bytes(p.user_key),
            "sequence": p.sequence,
            "kind": kind(p.kind),
        }),
        None => json!({ "raw": bytes(encoded) }),
    }
}

fn internal_key_text(encoded: &[u8]) -> String {
    match ParsedKey::parse(encoded) {
        Some(p) => format!("{}@{}:{}", bytes(p.user_key), p.sequence, kind(p.kind)),
        None => format!("(raw) {}", bytes(encoded)),
    }
}

fn entry_json(e: &Entry) -> Value {
    json!({
        "key": bytes(&e.key),
        "sequence": e.sequence,
        "kind": kind(e.kind),
        "value": bytes(&e.value),
    })
}

fn entry_text(e: &Entry) -> String {
    format!(
        "{}@{}:{} => {}",
        bytes(&e.key),
        e.sequence,
        kind(e.kind),
        bytes(&e.value)
    )
}

/// A range tombstone fragment as `{start, end, sequences}` (end exclusive,
/// sequences newest first).
fn fragment_json(f: &Fragment) -> Value {
    json!({ "start": bytes(&f.start), "end": bytes(&f.end), "sequences": f.seqs })
}

fn fragment_text(f: &Fragment) -> String {
    format!("[{}, {}) @ {:?}", bytes(&f.start), bytes(&f.end), f.seqs)
}

fn range_deletion_json(t: &RangeTombstone) -> Value {
    json!({ "start": bytes(&t.start), "end": bytes(&t.end), "sequence": t.seq })
}

fn table_meta_json(m: &TableMeta) -> Map<String, Value> {
    let value = json!({
        "table": m.id,
        "segment": m.segment,
        "offset": m.offset,
        "length": m.length,
        "smallest": internal_key_json(&m.smallest),
        "largest": internal_key_json(&m.largest),
        "entries": m.entries,
        "min_seq": m.min_seq,
        "max_seq": m.max_seq,
        "logs": m.logs,
    });
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn new_tables_json(tables: &[NewTable]) -> Vec<Value> {
    tables
        .iter()
        .map(|t| {
            let mut object = table_meta_json(&t.meta);
            object.insert("level".into(), json!(t.level));
            object.insert("run".into(), json!(t.run));
            Value::Object(object)
        })
        .collect()
}

fn deleted_tables_json(tables: &[DeletedTable]) -> Vec<Value> {
    tables
        .iter()
        .map(|d| json!({ "level": d.level, "run": d.run, "table": d.table }))
        .collect()
}

fn edit_json(e: &VersionEdit) -> Value {
    let new_tables = new_tables_json(&e.new_tables);
    let deleted_tables = deleted_tables_json(&e.deleted_tables);
    let buffer_frozen: Vec<Value> = e
        .buffer_frozen
        .iter()
        .map(|&(level, frozen)| json!({ "level": level, "frozen": frozen }))
        .collect();
    let merge_journal = e.merge_journal.as_ref().map(|j| {
        json!({
            "level": j.level,
            "input_runs": j.input_runs,
            "interim_run": j.interim_run,
            "output_level": j.output_level,
            "resume_after": bytes(&j.resume_after),
        })
    });
    let stats: Map<String, Value> = e
        .stats
        .iter()
        .map(|(name, value)| (name.clone(), json!(value)))
        .collect();
    let create_keyspace = e
        .create_keyspace
        .as_ref()
        .map(|def| json!({ "name": def.name, "options": def.options }));
    json!({
        "format_version": e.format_version,
        "keyspace": e.keyspace,
        "create_keyspace": create_keyspace,
        "drop_keyspace": e.drop_keyspace,
        "next_keyspace_id": e.next_keyspace_id,
        "log_number": e.log_number,
        "next_file_number": e.next_file_number,
        "last_sequence": e.last_sequence,
        "new_tables": new_tables,
        "deleted_tables": deleted_tables,
        "merge_journal": merge_journal,
        "merge_done": e.merge_done,
        "buffer_tables": new_tables_json(&e.buffer_tables),
        "buffer_removed": deleted_tables_json(&e.buffer_removed),
        "buffer_dropped": deleted_tables_json(&e.buffer_dropped),
        "buffer_frozen": buffer_frozen,
        "compact_pointers": e
            .compact_pointers
            .iter()
            .map(|(level, key)| json!({ "level": level, "key": bytes(key) }))
            .collect::<Vec<Value>>(),
        "buffer_rounds": e
            .buffer_rounds
            .iter()
            .map(|(level, r)| json!({
                "level": level,
                "start_bytes": r.start_bytes,
                "arrived": r.arrived,
                "departed": r.departed,
            }))
            .collect::<Vec<Value>>(),
        "buffer_recording": e
            .buffer_recording
            .iter()
            .map(|&(level, recording)| json!({ "level": level, "since": recording_since(recording) }))
            .collect::<Vec<Value>>(),
        "stats": stats,
    })
}

/// The sequence number a buffer's recording starts after; `None` when off.
fn recording_since(recording: BufferRecording) -> Option<u64> {
    match recording {
        BufferRecording::Off => None,
        BufferRecording::Since(seq) => Some(seq),
    }
}

fn version_json(record: &ManifestRecord) -> Value {
    let levels: Vec<Value> = record
        .levels
        .iter()
        .map(|runs| {
            Value::Array(
                runs.iter()
                    .map(|r| json!({ "run": r.id, "tables": r.tables }))
                    .collect(),
            )
        })
        .collect();
    json!({ "levels": levels })
}

fn manifest_json(dump: &ManifestDump) -> Value {
    let records: Vec<Value> = dump
        .records
        .iter()
        .map(|r| {
            json!({
                "offset": r.offset,
                "edit": edit_json(&r.edit),
                "version": version_json(r),
            })
        })
        .collect();
    json!({ "manifest": dump.path.display().to_string(), "records": records })
}

fn manifest_text(dump: &ManifestDump) -> String {
    let mut out = format!("manifest {}\n", dump.path.display());
    for r in &dump.records {
        let e = &r.edit;
        out += &format!("record at {}:\n", r.offset);
        if e.keyspace != 0 {
            out += &format!("  keyspace {}\n", e.keyspace);
        }
        if let Some(def) = &e.create_keyspace {
            out += &format!("  create keyspace {} named {:?}\n", e.keyspace, def.name);
        }
        if e.drop_keyspace {
            out += &format!("  drop keyspace {}\n", e.keyspace);
        }
        for (name, value) in [
            ("format_version", e.format_version),
            ("next_keyspace_id", e.next_keyspace_id.map(u64::from)),
            ("log_number", e.log_number),
            ("next_file_number", e.next_file_number),
            ("last_sequence", e.last_sequence),
        ] {
            if let Some(v) = value {
                out += &format!("  {name} {v}\n");
            }
        }
        for t in &e.new_tables {
            let m = &t.meta;
            out += &format!(
                "  + L{} run {} table {} at {}:{} ({} bytes, {} entries, seq {}..{}) {} .. {}\n",
                t.level,
                t.run,
                m.id,
                m.segment,
                m.offset,
                m.length,
                m.entries,
                m.min_seq,
                m.max_seq,
                internal_key_text(&m.smallest),
                internal_key_text(&m.largest)
            );
            if m.is_log_table() {
                out += &format!("    log table: values in logs {:?}\n", m.logs);
            }
        }
        for d in &e.deleted_tables {
            out += &format!("  - L{} run {} table {}\n", d.level, d.run, d.table);
        }
        if let Some(j) = &e.merge_journal {
            out += &format!(
                "  merge journal: L{} runs {:?} into run {} at L{}, done through {}\n",
                j.level,
                j.input_runs,
                j.interim_run,
                j.output_level,
                bytes(&j.resume_after)
            );
        }
        if e.merge_done {
            out += "  merge done\n";
        }
        for t in &e.buffer_tables {
            out += &format!(
                "  + buffer of L{} run {} table {}\n",
                t.level, t.run, t.meta.id
            );
        }
        for d in &e.buffer_removed {
            out += &format!(
                "  x buffer of L{} run {} table {} removed\n",
                d.level, d.run, d.table
            );
        }
        for d in &e.buffer_dropped {
            out += &format!(
                "  - buffer of L{} run {} entry {}\n",
                d.level, d.run, d.table
            );
        }
        for (level, frozen) in &e.buffer_frozen {
            out += &format!("  buffer of L{level} frozen {frozen}\n");
        }
        for (level, key) in &e.compact_pointers {
            out += &format!("  compaction pointer of L{level} at {}\n", bytes(key));
        }
        for (level, r) in &e.buffer_rounds {
            out += &format!(
                "  buffer round of L{level}: start {} arrived {} departed {}\n",
                r.start_bytes, r.arrived, r.departed
            );
        }
        for &(level, recording) in &e.buffer_recording {
            match recording_since(recording) {
                Some(seq) => {
                    out += &format!("  buffer of L{level} recorded after sequence {seq}\n")
                }
                None => out += &format!("  buffer of L{level} not recorded\n"),
            }
        }
        if !e.stats.is_empty() {
            out += &format!("  {} counters\n", e.stats.len());
        }
        out += "  version:";
        let mut empty = true;
        for (level, runs) in r.levels.iter().enumerate() {
            if runs.is_empty() {
                continue;
            }
            empty = false;
            out += &format!(" L{level}[");
            let runs: Vec<String> = runs
                .iter()
                .map(|run| format!("run {}: {:?}", run.id, run.tables))
                .collect();
            out += &runs.join(", ");
            out += "]";
        }
        if empty {
            out += " empty";
        }
        out += "\n";
    }
    out
}

fn index_json(i: &IndexEntry) -> Value {
    json!({
        "key": bytes(&i.key.key),
        "sequence": i.key.sequence,
        "block_offset": i.block_offset,
        "block_size": i.block_size,
    })
}

fn chunk_list_json(dump: &ChunkListDump) -> Value {
    let l = &dump.list;
    let keyspaces: Vec<Value> = l
        .keyspaces
        .iter()
        .map(|k| {
            let chunks: Vec<Value> = k
                .chunks
                .iter()
                .map(|c| {
                    json!({
                        "start": bytes(&c.start),
                        "table": c.table_number,
                        "log": c.log_number,
                    })
                })
                .collect();
            json!({
                "id": k.id,
                "name": k.name,
                "options": String::from_utf8_lossy(&k.options),
                "chunks": chunks,
            })
        })
        .collect();
    let counters: Map<String, Value> = l
        .counters
        .iter()
        .map(|(name, value)| (name.clone(), json!(value)))
        .collect();
    json!({
        "chunk_list": dump.path.display().to_string(),
        "last_sequence": l.last_sequence,
        "durable_sequence": l.durable_sequence,
        "next_file_number": l.next_file_number,
        "batch_log": l.batch_log_number,
        "next_keyspace_id": l.next_keyspace_id,
        "keyspaces": keyspaces,
        "counters": counters,
    })
}

fn chunk_list_text(dump: &ChunkListDump) -> String {
    let l = &dump.list;
    let mut out = format!(
        "chunk list {}: last sequence {}, durable sequence {}, next file {}, batch log {}\n",
        dump.path.display(),
        l.last_sequence,
        l.durable_sequence
            .map_or_else(|| "unknown".to_string(), |d| d.to_string()),
        l.next_file_number,
        l.batch_log_number
    );
    for k in &l.keyspaces {
        out += &format!(
            "keyspace {} (id {}): {} chunks\n",
            k.name,
            k.id,
            k.chunks.len()
        );
        for c in &k.chunks {
            let table = match c.table_number {
                0 => "no table".to_string(),
                n => format!("table {n}"),
            };
            out += &format!(
                "  from {:?}: {table}, log {}\n",
                bytes(&c.start),
                c.log_number
            );
        }
    }
    out
}

fn table_json(dump: &TableDump) -> Value {
    let mut table = table_meta_json(&dump.meta);
    table.insert("path".into(), json!(dump.path.display().to_string()));
    match &dump.place {
        TablePlace::Run { level, run } => {
            table.insert("level".into(), json!(level));
            table.insert("run".into(), json!(run));
        }
        TablePlace::Chunk {
            keyspace,
            start,
            log_number,
        } => {
            table.insert("keyspace".into(), json!(keyspace));
            table.insert("chunk_start".into(), json!(bytes(start)));
            table.insert("chunk_log".into(), json!(log_number));
        }
    }
    let p = &dump.properties;
    json!({
        "table": table,
        "properties": {
            "entries": p.entries,
            "deletions": p.deletions,
            "data_bytes": p.data_bytes,
            "raw_key_bytes": p.raw_key_bytes,
            "raw_value_bytes": p.raw_value_bytes,
            "smallest": internal_key_json(&p.smallest_key),
            "largest": internal_key_json(&p.largest_key),
            "min_seq": p.min_seq,
            "max_seq": p.max_seq,
            "format_version": p.format_version,
            "log_refs": p.log_refs,
            "range_deletions": p.range_deletions,
        },
        "index": dump.index.iter().map(index_json).collect::<Vec<_>>(),
        "entries": dump.entries.iter().enumerate().map(|(i, e)| {
            let mut entry = entry_json(e);
            if let Some(Some(a)) = dump.log_addresses.get(i) {
                entry["log_address"] = json!({
                    "log": a.record.log_number,
                    "record": a.record.offset,
                    "offset": a.offset,
                    "length": a.len,
                });
            }
            entry
        }).collect::<Vec<_>>(),
        "range_deletions": dump.range_deletions.iter().map(fragment_json).collect::<Vec<_>>(),
    })
}

fn table_text(dump: &TableDump) -> String {
    let m = &dump.meta;
    let p = &dump.properties;
    let place = match &dump.place {
        TablePlace::Run { level, run } => format!("L{level} run {run}"),
        TablePlace::Chunk {
            keyspace,
            start,
            log_number,
        } => format!(
            "funk of the chunk from {:?} in keyspace {keyspace} (log {log_number})",
            bytes(start)
        ),
    };
    let mut out = format!(
        "table {} in {} at {} ({} bytes), {place}\n",
        m.id,
        dump.path.display(),
        m.offset,
        m.length,
    );
    out += &format!(
        "properties: {} entries ({} deletions), {} data bytes, key bytes {}, value bytes {}, seq {}..{}, format {}\n",
        p.entries,
        p.deletions,
        p.data_bytes,
        p.raw_key_bytes,
        p.raw_value_bytes,
        p.min_seq,
        p.max_seq,
        p.format_version
    );
    out += &format!("index: {} blocks\n", dump.index.len());
    for i in &dump.index {
        out += &format!(
            "  {}@{} -> block at {} ({} bytes)\n",
            bytes(&i.key.key),
            i.key.sequence,
            i.block_offset,
            i.block_size
        );
    }
    if !p.log_refs.is_empty() {
        out += &format!("log table: values in logs {:?}\n", p.log_refs);
    }
    out += &format!("entries: {}\n", dump.entries.len());
    for (i, e) in dump.entries.iter().enumerate() {
        out += &format!("  {}", entry_text(e));
        if let Some(Some(a)) = dump.log_addresses.get(i) {
            out += &format!(" (from {} at byte {}, {} bytes)", a.record, a.offset, a.len);
        }
        out += "\n";
    }
    if !dump.range_deletions.is_empty() {
        out += &format!(
            "range deletions: {} fragments\n",
            dump.range_deletions.len()
        );
        for f in &dump.range_deletions {
            out += &format!("  {}\n", fragment_text(f));
        }
    }
    out
}

fn log_json(dump: &LogDump) -> Value {
    let records: Vec<Value> = dump
        .records
        .iter()
        .map(|r| {
            json!({
                "offset": r.offset,
                "sequence": r.first_sequence,
                "ops": r.ops.iter().zip(&r.op_keyspaces).map(|(e, &ks)| in_keyspace(entry_json(e), ks)).collect::<Vec<_>>(),
                "range_deletions": r.range_deletions.iter().zip(&r.range_deletion_keyspaces).map(|(t, &ks)| in_keyspace(range_deletion_json(t), ks)).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "log": dump.path.display().to_string(), "records": records })
}

/// A log op's JSON object with its keyspace id added.
fn in_keyspace(mut op: Value, keyspace: u32) -> Value {
    if let Value::Object(fields) = &mut op {
        fields.insert("keyspace".to_string(), json!(keyspace));
    }
    op
}

/// ` in keyspace N` for an op outside the default keyspace.
fn keyspace_text(keyspace: u32) -> String {
    match keyspace {
        0 => String::new(),
        n => format!(" in keyspace {n}"),
    }
}

fn log_text(dump: &LogDump) -> String {
    let mut out = format!("log {}\n", dump.path.display());
    for r in &dump.records {
        out += &format!(
            "record at {}: {} ops from sequence {}\n",
            r.offset,
            r.ops.len() + r.range_deletions.len(),
            r.first_sequence
        );
        for (e, &ks) in r.ops.iter().zip(&r.op_keyspaces) {
            out += &format!("  {}{}\n", entry_text(e), keyspace_text(ks));
        }
        for (t, &ks) in r.range_deletions.iter().zip(&r.range_deletion_keyspaces) {
            out += &format!(
                "  range deletion [{}, {}) @{}{}\n",
                bytes(&t.start),
                bytes(&t.end),
                t.seq,
                keyspace_text(ks)
            );
        }
    }
    out
}
