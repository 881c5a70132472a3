//! LevelDB's named properties (`leveldb.stats`, `leveldb.num-files-at-level<N>`,
//! `leveldb.sstables`, `leveldb.approximate-memory-usage`), computed from the
//! current version and the counters.

use std::fmt::Write;

use crate::db::{Db, Engine};
use crate::error::Printable;

const MIB: f64 = (1 << 20) as f64;

impl Db {
    /// The value of a LevelDB-style property, or `None` for an unknown name.
    pub fn property(&self, name: &str) -> Option<String> {
        let name = name.strip_prefix("leveldb.")?;
        if let Some(level) = name.strip_prefix("num-files-at-level") {
            let level: usize = level.parse().ok()?;
            return self
                .stats()
                .tables_per_level
                .get(level)
                .map(usize::to_string);
        }
        match name {
            "stats" => Some(self.stats_text()),
            "sstables" => Some(self.sstables_text()),
            "approximate-memory-usage" => Some(self.approximate_memory_usage().to_string()),
            _ => None,
        }
    }

    /// Bytes held by memtables and the block cache (chunked layout: the
    /// block cache and the chunk logs' filters).
    pub fn approximate_memory_usage(&self) -> u64 {
        let Some(inner) = self.lsm() else {
            return match &self.engine {
                Engine::Chunked(c) => c.0.memory_bytes(),
                Engine::Lsm(_) => 0,
            };
        };
        let memtables: u64 = inner
            .trees()
            .iter()
            .map(|t| {
                let sv = t.super_version();
                let imms: u64 = sv.imms.iter().map(|m| m.approximate_size()).sum();
                sv.mem.approximate_size() + imms
            })
            .sum();
        memtables + inner.table_cache.block_cache().usage()
    }

    /// LevelDB's per-level table: files, size and compaction traffic.
    fn stats_text(&self) -> String {
        let s = self.stats();
        let mut out = String::from(
            "                               Compactions\n\
             Level  Files Size(MB)  Runs Read(MB) Write(MB)\n\
             -----------------------------------------------\n",
        );
        for (level, &files) in s.tables_per_level.iter().enumerate() {
            let read = s.level_bytes_read.get(level).copied().unwrap_or(0);
            let written = s.level_bytes_written.get(level).copied().unwrap_or(0);
            if files == 0 && read == 0 && written == 0 {
                continue;
            }
            let _ = writeln!(
                out,
                "{level:>3} {files:>8} {:>8.0} {:>5} {:>8.0} {:>9.0}",
                s.bytes_per_level[level] as f64 / MIB,
                s.runs_per_level[level],
                read as f64 / MIB,
                written as f64 / MIB,
            );
        }
        out
    }

    /// Every live table of the default keyspace by level and run:
    /// `id:bytes[smallest .. largest]`.
    fn sstables_text(&self) -> String {
        let Some(inner) = self.lsm() else {
            return "chunked layout: funk tables are per chunk (see `thicket stats`)\n".into();
        };
        let sv = inner.default.super_version();
        let mut out = String::new();
        for (level, l) in sv.version.levels.iter().enumerate() {
            let _ = writeln!(out, "--- level {level} ---");
            for run in &l.runs {
                for t in &run.tables {
                    let _ = writeln!(
                        out,
                        " {}:{}['{}' .. '{}'] run {} segment {}",
                        t.id,
                        t.length,
                        Printable(t.smallest_user_key()),
                        Printable(t.largest_user_key()),
                        run.id,
                        t.segment,
                    );
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::db::Db;
    use crate::options::Options;

    fn small_store(dir: &std::path::Path) -> Db {
        let options = Options {
            write_buffer_size: 64 << 10,
            ..Options::default()
        };
        let db = Db::open(dir, options).unwrap();
        for i in 0..2000u32 {
            db.put(format!("key{i:06}").as_bytes(), [b'v'; 100])
                .unwrap();
        }
        db.flush().unwrap();
        db
    }

    #[test]
    fn properties_describe_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        let db = small_store(dir.path());
        let stats = db.stats();
        let l0 = db.property("leveldb.num-files-at-level0").unwrap();
        assert_eq!(l0, stats.tables_per_level[0].to_string());
        let total: usize = (0..7)
            .map(|l| {
                db.property(&format!("leveldb.num-files-at-level{l}"))
                    .unwrap()
                    .parse::<usize>()
                    .unwrap()
            })
            .sum();
        assert_eq!(total, stats.tables);
        assert!(total > 0);
        assert_eq!(db.property("leveldb.num-files-at-level7"), None);
        assert_eq!(db.property("leveldb.num-files-at-levelx"), None);
        assert_eq!(db.property("leveldb.nonsense"), None);
        assert_eq!(db.property("stats"), None);

        let sstables = db.property("leveldb.sstables").unwrap();
        assert!(sstables.starts_with("--- level 0 ---"));
        assert_eq!(sstables.matches("['key").count(), stats.tables);

        let empty_memory: u64 = db
            .property("leveldb.approximate-memory-usage")
            .unwrap()
            .parse()
            .unwrap();
        db.put(b"fresh", [b'v'; 1000]).unwrap();
        assert!(db.get(b"key000001").unwrap().is_some());
        let text = db.property("leveldb.stats").unwrap();
        assert!(text.contains("Level  Files"), "{text}");
        let memory: u64 = db
            .property("leveldb.approximate-memory-usage")
            .unwrap()
            .parse()
            .unwrap();
        assert!(memory > empty_memory + 1000, "{memory} {empty_memory}");
    }
}
