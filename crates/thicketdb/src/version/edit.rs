//! `VersionEdit`: one atomic change to the set of live tables, as recorded
//! in the MANIFEST. Encoded as tagged fields (see `docs/format.md`); an
//! unknown tag is corruption, since a newer format bumps the version tag.

use std::sync::Arc;

use super::lsbm_buffer::{BufferRecording, BufferRound};
use super::meta::TableMeta;
use crate::format::coding::{get_length_prefixed, get_varint64, put_length_prefixed, put_varint64};

/// Format version written in every MANIFEST's first edit. Version 2 adds
/// the compaction buffer's tags (10–13), version 3 the compaction pointer
/// (14), version 4 the buffer's freeze accounting (15) and recording (16),
/// version 5 log tables (17), version 6 keyspaces (18–21), version 7 log
/// tables in a compaction buffer (22); older MANIFESTs still open.
pub const MANIFEST_FORMAT_VERSION: u64 = 7;
/// The oldest format version this build reads.
const OLDEST_MANIFEST_FORMAT_VERSION: u64 = 1;

const TAG_LOG_NUMBER: u64 = 1;
const TAG_NEXT_FILE_NUMBER: u64 = 2;
const TAG_LAST_SEQUENCE: u64 = 3;
const TAG_NEW_TABLE: u64 = 4;
const TAG_DELETED_TABLE: u64 = 5;
const TAG_STAT: u64 = 6;
const TAG_FORMAT_VERSION: u64 = 7;
const TAG_MERGE_JOURNAL: u64 = 8;
const TAG_MERGE_DONE: u64 = 9;
const TAG_BUFFER_TABLE: u64 = 10;
const TAG_BUFFER_REMOVED: u64 = 11;
const TAG_BUFFER_DROPPED: u64 = 12;
const TAG_BUFFER_FROZEN: u64 = 13;
const TAG_COMPACT_POINTER: u64 = 14;
const TAG_BUFFER_ROUND: u64 = 15;
const TAG_BUFFER_RECORDING: u64 = 16;
/// A new table that is a log table: a new table's fields, then the logs it
/// references (count, numbers).
const TAG_NEW_LOG_TABLE: u64 = 17;
/// The keyspace the edit's table changes and log number belong to (absent:
/// the default keyspace, 0).
const TAG_KEYSPACE: u64 = 18;
/// The edit creates its keyspace: name and persisted options text.
const TAG_CREATE_KEYSPACE: u64 = 19;
/// The edit drops its keyspace and every table in it.
const TAG_DROP_KEYSPACE: u64 = 20;
/// The next keyspace id to hand out (ids are never reused).
const TAG_NEXT_KEYSPACE_ID: u64 = 21;
/// A table appended to a compaction-buffer run that is a log table: a
/// buffer table's fields, then the logs it references (count, numbers).
/// Without them a reopened store would not count the buffered table among
/// its logs' readers and could delete a log the table still addresses.
const TAG_BUFFER_LOG_TABLE: u64 = 22;
/// Most logs one log table may reference (a flush references one).
const MAX_LOG_REFS: u64 = 1 << 16;

/// SifrDB's compaction journal: a long merge of whole runs in progress.
/// Outputs persisted so far sit in `interim_run` at `level` (newer than the
/// inputs, so reads prefer them); input tables entirely at or below
/// `resume_after` are already released. After a crash the merge resumes
/// from the first key above `resume_after`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeJournal {
    /// Level of the input runs and of the interim run.
    pub level: usize,
    /// The runs being merged.
    pub input_runs: Vec<u64>,
    /// Where persisted outputs wait until the merge completes.
    pub interim_run: u64,
    /// Level the finished run is appended to.
    pub output_level: usize,
    /// Every input entry with a user key `<=` this is in the outputs.
    pub resume_after: Vec<u8>,
}

/// A table added to a run of a level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTable {
    pub level: usize,
    pub run: u64,
    pub meta: Arc<TableMeta>,
}

/// A table removed from a run of a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeletedTable {
    pub level: usize,
    pub run: u64,
    pub table: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionEdit {
    pub format_version: Option<u64>,
    /// Logs numbered below this hold nothing that is not in tables.
    pub log_number: Option<u64>,
    pub next_file_number: Option<u64>,
    pub last_sequence: Option<u64>,
    pub new_tables: Vec<NewTable>,
    pub deleted_tables: Vec<DeletedTable>,
    /// Cumulative engine counters at the time of the edit.
    pub stats: Vec<(String, u64)>,
    /// A merge checkpoint (SifrDB early cleaning).
    pub merge_journal: Option<MergeJournal>,
    /// The journaled merge completed.
    pub merge_done: bool,
    /// Tables appended to a level's compaction-buffer run (LSbM).
    pub buffer_tables: Vec<NewTable>,
    /// Buffer tables whose data are dropped: they stay as removed entries.
    pub buffer_removed: Vec<DeletedTable>,
    /// Buffer entries (removed ones) taken out of their run altogether.
    pub buffer_dropped: Vec<DeletedTable>,
    /// Levels whose buffer is frozen (`true`) or unfrozen.
    pub buffer_frozen: Vec<(usize, bool)>,
    /// Round-robin compaction pointers advanced (level, internal key).
    pub compact_pointers: Vec<(usize, Vec<u8>)>,
    /// Levels whose buffer freeze accounting changed, with the new state.
    pub buffer_rounds: Vec<(usize, BufferRound)>,
    /// Levels whose buffer recording changed (LSbM range reads).
    pub buffer_recording: Vec<(usize, BufferRecording)>,
    /// The keyspace this edit's tree changes (and `log_number`) belong to;
    /// 0 is the default keyspace.
    pub keyspace: u32,
    /// The edit creates `keyspace` with this name and options.
    pub create_keyspace: Option<KeyspaceDef>,
    /// The edit drops `keyspace`.
    pub drop_keyspace: bool,
    /// The next keyspace id to hand out.
    pub next_keyspace_id: Option<u32>,
}

/// What a keyspace is created with: its name and its options as the text
/// of an `OPTIONS` file (`Options::encode`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyspaceDef {
    pub name: String,
    pub options: String,
}

impl VersionEdit {
    pub fn add_table(&mut self, level: usize, run: u64, meta: Arc<TableMeta>) {
        self.new_tables.push(NewTable { level, run, meta });
    }

    pub fn delete_table(&mut self, level: usize, run: u64, table: u64) {
        self.deleted_tables.push(DeletedTable { level, run, table });
    }

    pub fn add_buffer_table(&mut self, level: usize, run: u64, meta: Arc<TableMeta>) {
        self.buffer_tables.push(NewTable { level, run, meta });
    }

    pub fn remove_buffer_table(&mut self, level: usize, run: u64, table: u64) {
        self.buffer_removed.push(DeletedTable { level, run, table });
    }

    pub fn drop_buffer_entry(&mut self, level: usize, run: u64, table: u64) {
        self.buffer_dropped.push(DeletedTable { level, run, table });
    }

    /// Whether the edit changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == VersionEdit::default()
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut field = |tag: u64, v: Option<u64>| {
            if let Some(v) = v {
                put_varint64(&mut out, tag);
                put_varint64(&mut out, v);
            }
        };
        field(TAG_FORMAT_VERSION, self.format_version);
        field(TAG_LOG_NUMBER, self.log_number);
        field(TAG_NEXT_FILE_NUMBER, self.next_file_number);
        field(TAG_LAST_SEQUENCE, self.last_sequence);
        field(TAG_NEXT_KEYSPACE_ID, self.next_keyspace_id.map(u64::from));
        field(
            TAG_KEYSPACE,
            (self.keyspace != 0).then_some(self.keyspace.into()),
        );
        if let Some(def) = &self.create_keyspace {
            put_varint64(&mut out, TAG_CREATE_KEYSPACE);
            put_length_prefixed(&mut out, def.name.as_bytes());
            put_length_prefixed(&mut out, def.options.as_bytes());
        }
        if self.drop_keyspace {
            put_varint64(&mut out, TAG_DROP_KEYSPACE);
        }
        for t in &self.new_tables {
            put_table_with_logs(&mut out, TAG_NEW_TABLE, TAG_NEW_LOG_TABLE, t);
        }
        for d in &self.deleted_tables {
            put_deleted_table(&mut out, TAG_DELETED_TABLE, d);
        }
        for t in &self.buffer_tables {
            put_table_with_logs(&mut out, TAG_BUFFER_TABLE, TAG_BUFFER_LOG_TABLE, t);
        }
        for d in &self.buffer_removed {
            put_deleted_table(&mut out, TAG_BUFFER_REMOVED, d);
        }
        for d in &self.buffer_dropped {
            put_deleted_table(&mut out, TAG_BUFFER_DROPPED, d);
        }
        for &(level, frozen) in &self.buffer_frozen {
            put_varint64(&mut out, TAG_BUFFER_FROZEN);
            put_varint64(&mut out, level as u64);
            put_varint64(&mut out, u64::from(frozen));
        }
        for (level, key) in &self.compact_pointers {
            put_varint64(&mut out, TAG_COMPACT_POINTER);
            put_varint64(&mut out, *level as u64);
            put_length_prefixed(&mut out, key);
        }
        for (level, round) in &self.buffer_rounds {
            put_varint64(&mut out, TAG_BUFFER_ROUND);
            put_varint64(&mut out, *level as u64);
            for v in [round.start_bytes, round.arrived, round.departed] {
                put_varint64(&mut out, v);
            }
        }
        for &(level, recording) in &self.buffer_recording {
            put_varint64(&mut out, TAG_BUFFER_RECORDING);
            put_varint64(&mut out, level as u64);
            match recording {
                BufferRecording::Off => put_varint64(&mut out, 0),
                BufferRecording::Since(seq) => {
                    put_varint64(&mut out, 1);
                    put_varint64(&mut out, seq);
                }
            }
        }
        if let Some(j) = &self.merge_journal {
            put_varint64(&mut out, TAG_MERGE_JOURNAL);
            put_varint64(&mut out, j.level as u64);
            put_varint64(&mut out, j.input_runs.len() as u64);
            for r in &j.input_runs {
                put_varint64(&mut out, *r);
            }
            put_varint64(&mut out, j.interim_run);
            put_varint64(&mut out, j.output_level as u64);
            put_length_prefixed(&mut out, &j.resume_after);
        }
        if self.merge_done {
            put_varint64(&mut out, TAG_MERGE_DONE);
        }
        for (name, value) in &self.stats {
            put_varint64(&mut out, TAG_STAT);
            put_length_prefixed(&mut out, name.as_bytes());
            put_varint64(&mut out, *value);
        }
        out
    }

    /// Decodes an edit; the error string says what was malformed (the
    /// caller adds file and offset).
    pub fn decode(mut src: &[u8]) -> Result<VersionEdit, String> {
        let mut edit = VersionEdit::default();
        let src = &mut src;
        let num = |src: &mut &[u8], what: &str| {
            get_varint64(src).ok_or_else(|| format!("truncated {what}"))
        };
        while !src.is_empty() {
            let tag = num(src, "tag")?;
            match tag {
                TAG_FORMAT_VERSION => {
                    let v = num(src, "format version")?;
                    if !(OLDEST_MANIFEST_FORMAT_VERSION..=MANIFEST_FORMAT_VERSION).contains(&v) {
                        return Err(format!("unsupported MANIFEST format version {v}"));
                    }
                    edit.format_version = Some(v);
                }
                TAG_LOG_NUMBER => edit.log_number = Some(num(src, "log number")?),
                TAG_NEXT_FILE_NUMBER => edit.next_file_number = Some(num(src, "next file")?),
                TAG_LAST_SEQUENCE => edit.last_sequence = Some(num(src, "last sequence")?),
                TAG_NEW_TABLE => edit.new_tables.push(get_new_table(src)?),
                TAG_NEW_LOG_TABLE => edit.new_tables.push(get_log_table(src)?),
                TAG_DELETED_TABLE => edit.deleted_tables.push(get_deleted_table(src)?),
                TAG_BUFFER_TABLE => edit.buffer_tables.push(get_new_table(src)?),
                TAG_BUFFER_LOG_TABLE => edit.buffer_tables.push(get_log_table(src)?),
                TAG_BUFFER_REMOVED => edit.buffer_removed.push(get_deleted_table(src)?),
                TAG_BUFFER_DROPPED => edit.buffer_dropped.push(get_deleted_table(src)?),
                TAG_BUFFER_FROZEN => {
                    let level = level(num(src, "frozen level")?)?;
                    let frozen = match num(src, "frozen flag")? {
                        0 => false,
                        1 => true,
                        other => return Err(format!("frozen flag {other} is not 0 or 1")),
                    };
                    edit.buffer_frozen.push((level, frozen));
                }
                TAG_STAT => {
                    let name = get_length_prefixed(src).ok_or("truncated stat name")?;
                    let name = std::str::from_utf8(name).map_err(|_| "stat name not UTF-8")?;
                    let value = num(src, "stat value")?;
                    edit.stats.push((name.to_string(), value));
                }
                TAG_MERGE_JOURNAL => {
                    let level = level(num(src, "journal level")?)?;
                    let runs = num(src, "journal run count")?;
                    if runs > 1 << 20 {
                        return Err(format!("journal names {runs} runs"));
                    }
                    let input_runs = (0..runs)
                        .map(|_| num(src, "journal input run"))
                        .collect::<Result<Vec<_>, _>>()?;
                    let interim_run = num(src, "journal interim run")?;
                    let output_level = self::level(num(src, "journal output level")?)?;
                    let resume_after = get_length_prefixed(src)
                        .ok_or("truncated journal resume key")?
                        .to_vec();
                    edit.merge_journal = Some(MergeJournal {
                        level,
                        input_runs,
                        interim_run,
                        output_level,
                        resume_after,
                    });
                }
                TAG_MERGE_DONE => edit.merge_done = true,
                TAG_KEYSPACE => edit.keyspace = keyspace_id(num(src, "keyspace id")?)?,
                TAG_NEXT_KEYSPACE_ID => {
                    edit.next_keyspace_id = Some(keyspace_id(num(src, "next keyspace id")?)?)
                }
                TAG_CREATE_KEYSPACE => {
                    let mut text = |what: &str| {
                        let bytes = get_length_prefixed(src).ok_or(format!("truncated {what}"))?;
                        String::from_utf8(bytes.to_vec()).map_err(|_| format!("{what} not UTF-8"))
                    };
                    let name = text("keyspace name")?;
                    let options = text("keyspace options")?;
                    edit.create_keyspace = Some(KeyspaceDef { name, options });
                }
                TAG_DROP_KEYSPACE => edit.drop_keyspace = true,
                TAG_COMPACT_POINTER => {
                    let level = level(num(src, "compact pointer level")?)?;
                    let key = get_length_prefixed(src).ok_or("truncated compact pointer")?;
                    edit.compact_pointers.push((level, key.to_vec()));
                }
                TAG_BUFFER_ROUND => {
                    let level = level(num(src, "buffer round level")?)?;
                    let round = BufferRound {
                        start_bytes: num(src, "buffer round start bytes")?,
                        arrived: num(src, "buffer round arrivals")?,
                        departed: num(src, "buffer round departures")?,
                    };
                    edit.buffer_rounds.push((level, round));
                }
                TAG_BUFFER_RECORDING => {
                    let level = level(num(src, "buffer recording level")?)?;
                    let recording = match num(src, "buffer recording flag")? {
                        0 => BufferRecording::Off,
                        1 => BufferRecording::Since(num(src, "buffer recording sequence")?),
                        other => {
                            return Err(format!("buffer recording flag {other} is not 0 or 1"))
                        }
                    };
                    edit.buffer_recording.push((level, recording));
                }
                other => return Err(format!("unknown edit tag {other}")),
            }
        }
        Ok(edit)
    }
}

fn put_new_table(out: &mut Vec<u8>, tag: u64, t: &NewTable) {
    put_varint64(out, tag);
    put_varint64(out, t.level as u64);
    put_varint64(out, t.run);
    let m = &t.meta;
    for v in [m.id, m.segment, m.offset, m.length] {
        put_varint64(out, v);
    }
    put_length_prefixed(out, &m.smallest);
    put_length_prefixed(out, &m.largest);
    for v in [m.entries, m.min_seq, m.max_seq] {
        put_varint64(out, v);
    }
}

/// A table under `tag`, or under `log_tag` followed by its log references
/// when it is a log table (TRIAD-LOG).
fn put_table_with_logs(out: &mut Vec<u8>, tag: u64, log_tag: u64, t: &NewTable) {
    if t.meta.logs.is_empty() {
        put_new_table(out, tag, t);
        return;
    }
    put_new_table(out, log_tag, t);
    put_varint64(out, t.meta.logs.len() as u64);
    for &log in &t.meta.logs {
        put_varint64(out, log);
    }
}

fn put_deleted_table(out: &mut Vec<u8>, tag: u64, d: &DeletedTable) {
    put_varint64(out, tag);
    put_varint64(out, d.level as u64);
    put_varint64(out, d.run);
    put_varint64(out, d.table);
}

fn get_new_table(src: &mut &[u8]) -> Result<NewTable, String> {
    let num =
        |src: &mut &[u8], what: &str| get_varint64(src).ok_or_else(|| format!("truncated {what}"));
    let level = level(num(src, "level")?)?;
    let run = num(src, "run")?;
    let id = num(src, "table id")?;
    let segment = num(src, "segment")?;
    let offset = num(src, "offset")?;
    let length = num(src, "length")?;
    let smallest = internal_key(src, "smallest key")?;
    let largest = internal_key(src, "largest key")?;
    let entries = num(src, "entries")?;
    let min_seq = num(src, "min seq")?;
    let max_seq = num(src, "max seq")?;
    Ok(NewTable {
        level,
        run,
        meta: Arc::new(TableMeta {
            id,
            segment,
            offset,
            length,
            smallest,
            largest,
            entries,
            min_seq,
            max_seq,
            sketch: Default::default(),
            logs: Vec::new(),
        }),
    })
}

/// A table's fields followed by the logs it references (a log table).
fn get_log_table(src: &mut &[u8]) -> Result<NewTable, String> {
    let num =
        |src: &mut &[u8], what: &str| get_varint64(src).ok_or_else(|| format!("truncated {what}"));
    let mut table = get_new_table(src)?;
    let count = num(src, "log reference count")?;
    if count == 0 || count > MAX_LOG_REFS {
        return Err(format!("log table references {count} logs"));
    }
    let logs = (0..count)
        .map(|_| num(src, "log reference"))
        .collect::<Result<Vec<_>, _>>()?;
    Arc::make_mut(&mut table.meta).logs = logs;
    Ok(table)
}

fn get_deleted_table(src: &mut &[u8]) -> Result<DeletedTable, String> {
    let num =
        |src: &mut &[u8], what: &str| get_varint64(src).ok_or_else(|| format!("truncated {what}"));
    Ok(DeletedTable {
        level: level(num(src, "level")?)?,
        run: num(src, "run")?,
        table: num(src, "table id")?,
    })
}

fn keyspace_id(v: u64) -> Result<u32, String> {
    u32::try_from(v).map_err(|_| format!("keyspace id {v} out of range"))
}

fn level(v: u64) -> Result<usize, String> {
    if v < super::NUM_LEVELS as u64 {
        Ok(v as usize)
    } else {
        Err(format!("level {v} out of range"))
    }
}

fn internal_key(src: &mut &[u8], what: &str) -> Result<Vec<u8>, String> {
    let k = get_length_prefixed(src).ok_or_else(|| format!("truncated {what}"))?;
    crate::format::internal_key::ParsedKey::parse(k).ok_or_else(|| format!("malformed {what}"))?;
    Ok(k.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::meta::tests::table;
    use proptest::prelude::*;

    #[test]
    fn round_trip() {
        let mut e = VersionEdit {
            format_version: Some(MANIFEST_FORMAT_VERSION),
            log_number: Some(5),
            next_file_number: Some(99),
            last_sequence: Some(1234),
            stats: vec![("fsyncs_log".into(), 17)],
            ..Default::default()
        };
        e.add_table(0, 7, table(8, "a", "m"));
        e.add_table(1, 3, table(9, "n", "z"));
        e.delete_table(1, 3, 4);
        assert_eq!(VersionEdit::decode(&e.encode()).unwrap(), e);
        e.merge_journal = Some(MergeJournal {
            level: 2,
            input_runs: vec![5, 6, 7],
            interim_run: 9,
            output_level: 3,
            resume_after: b"key42".to_vec(),
        });
        e.merge_done = true;
        assert_eq!(VersionEdit::decode(&e.encode()).unwrap(), e);
        e.add_buffer_table(2, 11, table(12, "c", "d"));
        e.remove_buffer_table(2, 11, 12);
        e.drop_buffer_entry(3, 4, 5);
        e.buffer_frozen = vec![(2, true), (3, false)];
        assert_eq!(VersionEdit::decode(&e.encode()).unwrap(), e);
        e.compact_pointers = vec![(1, b"k\x01\0\0\0\0\0\0\0".to_vec()), (3, Vec::new())];
        assert_eq!(VersionEdit::decode(&e.encode()).unwrap(), e);
        e.buffer_rounds = vec![(
            2,
            BufferRound {
                start_bytes: 1 << 40,
                arrived: 7,
                departed: 0,
            },
        )];
        e.buffer_recording = vec![(2, BufferRecording::Since(4321)), (3, BufferRecording::Off)];
        assert_eq!(VersionEdit::decode(&e.encode()).unwrap(), e);
        let mut log_table = (*table(13, "e", "f")).clone();
        log_table.logs = vec![21, 22];
        e.add_table(0, 14, Arc::new(log_table));
        assert_eq!(VersionEdit::decode(&e.encode()).unwrap(), e);
        e.keyspace = 3;
        e.next_keyspace_id = Some(4);
        e.create_keyspace = Some(KeyspaceDef {
            name: "users".into(),
            options: "profile=default\n".into(),
        });
        e.drop_keyspace = true;
        assert_eq!(VersionEdit::decode(&e.encode()).unwrap(), e);
    }

    /// A log table kept in a compaction buffer (an L0 log table merged or
    /// moved into L1 under LSbM) must come back from the MANIFEST with its
    /// log references: the version pins the logs its tables reference, and
    /// a buffered table that lost them let a reopened store delete a log
    /// the table still addresses (`model_keyspaces_under_every_profile`,
    /// profile `triad`, posix seed 802).
    #[test]
    fn a_buffered_log_table_keeps_its_log_references() {
        let mut log_table = (*table(13, "e", "f")).clone();
        log_table.logs = vec![67];
        let mut e = VersionEdit::default();
        e.add_buffer_table(1, 5, Arc::new(log_table));
        e.add_buffer_table(1, 5, table(14, "g", "h"));
        let decoded = VersionEdit::decode(&e.encode()).unwrap();
        let logs: Vec<&[u64]> = decoded.buffer_tables.iter().map(|t| &t.meta.logs[..]).collect();
        assert_eq!(logs, [&[67][..], &[][..]]);
        assert_eq!(decoded, e);
    }

    #[test]
    fn reads_format_version_1_and_rejects_newer() {
        let edit = |v: u64| {
            let mut bytes = Vec::new();
            put_varint64(&mut bytes, TAG_FORMAT_VERSION);
            put_varint64(&mut bytes, v);
            VersionEdit::decode(&bytes)
        };
        assert_eq!(edit(1).unwrap().format_version, Some(1));
        assert!(edit(MANIFEST_FORMAT_VERSION + 1).is_err());
        let mut bytes = Vec::new();
        put_varint64(&mut bytes, TAG_BUFFER_FROZEN);
        put_varint64(&mut bytes, 1);
        put_varint64(&mut bytes, 2);
        assert!(VersionEdit::decode(&bytes)
            .unwrap_err()
            .contains("frozen flag"));
    }

    #[test]
    fn rejects_unknown_tag_and_bad_level() {
        assert!(VersionEdit::decode(&[99, 1]).is_err());
        let mut bytes = Vec::new();
        put_varint64(&mut bytes, TAG_DELETED_TABLE);
        put_varint64(&mut bytes, 50);
        put_varint64(&mut bytes, 1);
        put_varint64(&mut bytes, 1);
        assert!(VersionEdit::decode(&bytes).unwrap_err().contains("level"));
    }

    proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = VersionEdit::decode(&bytes);
        }

        #[test]
        fn every_truncation_is_an_error_or_prefix(cut in 0usize..60) {
            let mut e = VersionEdit::default();
            e.add_table(2, 3, table(4, "abc", "xyz"));
            let bytes = e.encode();
            let cut = cut.min(bytes.len() - 1);
            prop_assert!(VersionEdit::decode(&bytes[..cut]).map(|d| d != e).unwrap_or(true));
        }
    }
}
