//! Range-read plans on constructed shapes, in the style of the picker
//! tests: a level and its buffer are written as text, the plan is
//! rendered as text.

use std::sync::Arc;

use super::*;
use crate::format::internal_key::{InternalKey, ValueKind};
use crate::version::{TableMeta, VersionEdit};

/// Builds level 2 from lines `L: <table> ...` (its run) and `B<run>:
/// <table> ...` (a buffer run; a trailing `x` marks a removed entry), a
/// table written `<lo>-<hi>[@<min_seq>]` (default 10), and `since <seq>`
/// (the buffer's recording; default 0, `off`: not recorded).
fn version(shape: &str) -> Version {
    let mut edit = VersionEdit {
        buffer_recording: vec![(2, BufferRecording::Since(0))],
        ..VersionEdit::default()
    };
    for (id, line) in (100..).zip(shape.lines().map(str::trim).filter(|l| !l.is_empty())) {
        if let Some(since) = line.strip_prefix("since ") {
            edit.buffer_recording = vec![(
                2,
                match since {
                    "off" => BufferRecording::Off,
                    seq => BufferRecording::Since(seq.parse().unwrap()),
                },
            )];
            continue;
        }
        let (head, tables) = line.split_once(':').unwrap();
        for (i, t) in tables.split_whitespace().enumerate() {
            let (t, removed) = t.strip_suffix('x').map_or((t, false), |t| (t, true));
            let (range, seq) = t.split_once('@').unwrap_or((t, "10"));
            let (lo, hi) = range.split_once('-').unwrap();
            let min_seq = seq.parse().unwrap();
            let meta = Arc::new(TableMeta {
                id: id * 100 + i as u64,
                segment: id,
                offset: 16,
                length: 100,
                smallest: InternalKey::new(lo.as_bytes(), 90, ValueKind::Value).into_vec(),
                largest: InternalKey::new(hi.as_bytes(), min_seq, ValueKind::Value).into_vec(),
                entries: 2,
                min_seq,
                max_seq: 90,
                sketch: Default::default(),
                logs: Vec::new(),
            });
            match head.strip_prefix('B') {
                Some(run) => {
                    let run = run.parse().unwrap();
                    let table = meta.id;
                    edit.add_buffer_table(2, run, meta);
                    if removed {
                        edit.remove_buffer_table(2, run, table);
                    }
                }
                None => edit.add_table(2, 1, meta),
            }
        }
    }
    Version::default().apply(&edit).unwrap()
}

/// The plan as `buffer <c | level <=f | buffer ..`: each piece's source
/// and end.
fn render(shape: &str) -> String {
    let v = version(shape);
    let Some(plan) = plan(&v, 2) else {
        return "level only".into();
    };
    let pieces: Vec<String> = plan
        .iter()
        .map(|p| {
            let end = match &p.end {
                Bound::Included(k) => format!("<={}", String::from_utf8_lossy(k)),
                Bound::Excluded(k) => format!("<{}", String::from_utf8_lossy(k)),
                Bound::Unbounded => "..".into(),
            };
            let source = match p.source {
                PieceSource::Level => "level",
                PieceSource::Buffer => "buffer",
            };
            format!("{source} {end}")
        })
        .collect();
    pieces.join(" | ")
}

#[test]
fn plans() {
    let cases: &[(&str, &str)] = &[
        // Every buffer table present: the whole level reads the buffer.
        ("L: a-z\n B7: a-f m-p\n B5: c-k", "buffer .."),
        // A removed entry sends its range to the level's run (lines
        // 11–13), whatever older present table lies under it.
        (
            "L: a-z\n B7: a-f m-px\n B5: c-z",
            "buffer <m | level <=p | buffer ..",
        ),
        // Overlapping removed ranges of different runs make one piece.
        (
            "L: a-z\n B7: a-b d-gx\n B5: f-kx q-r",
            "buffer <d | level <=k | buffer ..",
        ),
        // A gap with no present buffer table reads the level's run.
        ("L: a-z\n B7: a-cx m-n\n B5: a-b", "level <=c | buffer .."),
        ("L: a-z\n B7: c-dx\n B5: a-b", "buffer <c | level .."),
        // Level tables older than the recording are not in the buffer.
        (
            "since 50\n L: a-f@60 g-m@40 n-z@70\n B7: a-z",
            "buffer <g | level <=m | buffer ..",
        ),
        // Not recorded, no present table, or no level run: no plan.
        ("since off\n L: a-z\n B7: a-z", "level only"),
        ("L: a-z\n B7: a-zx", "level only"),
        ("B7: a-z", "level only"),
    ];
    for (shape, want) in cases {
        assert_eq!(render(shape), *want, "shape:\n{shape}");
    }
}
