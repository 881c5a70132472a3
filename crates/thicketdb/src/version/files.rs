//! Names of the files in a store directory.

use std::path::{Path, PathBuf};

/// The kinds of file a store directory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Log(u64),
    Segment(u64),
    Manifest(u64),
    Current,
    Options,
    Lock,
    Temp(u64),
}

pub fn log_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.log"))
}

pub fn segment_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.seg"))
}

pub fn manifest_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

pub fn temp_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.tmp"))
}

pub fn current_path(dir: &Path) -> PathBuf {
    dir.join("CURRENT")
}

pub fn options_path(dir: &Path) -> PathBuf {
    dir.join(crate::options::OPTIONS_FILE_NAME)
}

pub fn lock_path(dir: &Path) -> PathBuf {
    dir.join("LOCK")
}

/// Classifies a directory entry; `None` for files that are not ours.
pub fn parse_file_name(name: &str) -> Option<FileKind> {
    match name {
        "CURRENT" => return Some(FileKind::Current),
        "OPTIONS" => return Some(FileKind::Options),
        "LOCK" => return Some(FileKind::Lock),
        _ => {}
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return n.parse().ok().map(FileKind::Manifest);
    }
    let (stem, ext) = name.split_once('.')?;
    let number: u64 = stem.parse().ok()?;
    match ext {
        "log" => Some(FileKind::Log(number)),
        "seg" => Some(FileKind::Segment(number)),
        "tmp" => Some(FileKind::Temp(number)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let dir = Path::new("/d");
        let name = |p: PathBuf| p.file_name().unwrap().to_str().unwrap().to_string();
        assert_eq!(
            parse_file_name(&name(log_path(dir, 7))),
            Some(FileKind::Log(7))
        );
        assert_eq!(
            parse_file_name(&name(segment_path(dir, 1234567))),
            Some(FileKind::Segment(1234567))
        );
        assert_eq!(
            parse_file_name(&manifest_name(3)),
            Some(FileKind::Manifest(3))
        );
        assert_eq!(parse_file_name("CURRENT"), Some(FileKind::Current));
        assert_eq!(parse_file_name("notes.txt"), None);
        assert_eq!(parse_file_name("12.weird"), None);
    }
}
