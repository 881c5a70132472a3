//! Whole-store verification: reading the store's state back, checking it
//! against the shadow after a process crash, and against the write history
//! after a simulated power loss.

use std::collections::HashMap;

use thicketdb::ReadOptions;

use super::expected::{Expected, HistoryEntry, Slot, NONE};
use super::keys::{describe, describe_base, key, parse_key, parse_value, ABSENT};
use super::spaces::Spaces;

/// Problems found, one line each.
pub type Problems = Vec<String>;

/// Key-value pairs in key order.
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// The base every key holds, read by a forward scan of every keyspace,
/// checked against a reverse scan and a point lookup of every key.
pub fn read_state(spaces: &Spaces, keys: u32) -> Result<Vec<u32>, Problems> {
    let mut problems = Vec::new();
    let mut state = vec![ABSENT; keys as usize];
    for c in 0..spaces.count() {
        read_keyspace(spaces, c, &mut state, &mut problems);
    }
    for i in 0..keys {
        let got = match spaces.of(i).get(key(i)) {
            Ok(v) => v,
            Err(e) => {
                problems.push(format!("get {}: {e}", describe(&key(i))));
                continue;
            }
        };
        let base = got.as_deref().map_or(Some(ABSENT), |v| parse_value(i, v));
        if base != Some(state[i as usize]) {
            problems.push(format!(
                "key {}: get returns {} but the scan saw {}",
                describe(&key(i)),
                got.as_deref().map_or("absent".into(), describe),
                describe_base(state[i as usize]),
            ));
        }
    }
    if problems.is_empty() {
        Ok(state)
    } else {
        Err(problems)
    }
}

/// Scans keyspace number `c` both ways into `state`.
fn read_keyspace(spaces: &Spaces, c: u32, state: &mut [u32], problems: &mut Problems) {
    let keys = state.len() as u32;
    let scan = |reverse: bool| -> Result<Entries, String> {
        let mut iter = spaces
            .get(c)
            .iter(ReadOptions::default())
            .map_err(|e| format!("iterator: {e}"))?;
        let mut out = Vec::new();
        if reverse {
            iter.seek_to_last();
        } else {
            iter.seek_to_first();
        }
        while iter.valid() {
            out.push((iter.key().to_vec(), iter.value().to_vec()));
            if reverse {
                iter.prev();
            } else {
                iter.next();
            }
        }
        iter.status().map_err(|e| format!("iterator: {e}"))?;
        if reverse {
            out.reverse();
        }
        Ok(out)
    };
    let (forward, backward) = match (scan(false), scan(true)) {
        (Ok(f), Ok(b)) => (f, b),
        (Err(e), _) | (_, Err(e)) => return problems.push(format!("keyspace {c}: {e}")),
    };
    if forward != backward {
        let n = forward
            .iter()
            .zip(&backward)
            .take_while(|(a, b)| a == b)
            .count();
        problems.push(format!(
            "keyspace {c}: forward and reverse scans differ ({} vs {} entries) at entry {n}: {} vs {}",
            forward.len(),
            backward.len(),
            forward.get(n).map_or("end".into(), |e| describe(&e.0)),
            backward.get(n).map_or("end".into(), |e| describe(&e.0)),
        ));
    }
    let mut last = None;
    for (k, v) in &forward {
        match parse_key(k).filter(|&i| i < keys && spaces.holds(c, i)) {
            None => problems.push(format!("stray key {} in keyspace {c}", describe(k))),
            Some(i) => {
                if last >= Some(i) {
                    problems.push(format!("scan out of order at key {}", describe(k)));
                }
                last = Some(i);
                match parse_value(i, v) {
                    Some(base) => state[i as usize] = base,
                    None => problems.push(format!(
                        "key {}: value is no value stress writes: {}",
                        describe(k),
                        describe(v)
                    )),
                }
            }
        }
    }
}

/// Checks a store recovered from a process crash against the shadow: keys
/// with no write in flight hold their acknowledged value; keys with one hold
/// the old or the new value; a batch in flight is all old or all new.
pub fn check_recovered(state: &[u32], expected: &Expected) -> Problems {
    let mut problems = Vec::new();
    // Batch id -> (a key that has the new value, a key that has the old).
    let mut batches: HashMap<u64, (Option<u32>, Option<u32>)> = HashMap::new();
    for (i, &got) in state.iter().enumerate() {
        let i = i as u32;
        let slot = expected.slot(i);
        if !slot.allows(got) {
            problems.push(format!(
                "key {}: expected {}, actual {}{}",
                describe(&key(i)),
                slot.describe(),
                describe_base(got),
                if slot.acked != ABSENT && got == ABSENT && slot.pending == NONE {
                    " (acknowledged write lost)"
                } else if slot.acked == ABSENT && got != ABSENT && slot.pending == NONE {
                    " (resurrected or phantom value)"
                } else {
                    ""
                }
            ));
            continue;
        }
        if slot.pending != NONE && slot.batch != 0 && slot.pending != slot.acked {
            let entry = batches.entry(slot.batch).or_default();
            if got == slot.pending {
                entry.0 = Some(i);
            } else {
                entry.1 = Some(i);
            }
        }
    }
    for (batch, entry) in batches {
        if let (Some(new), Some(old)) = entry {
            problems.push(format!(
                "batch {batch} applied partially: key {} has its new value, key {} its old one",
                describe(&key(new)),
                describe(&key(old)),
            ));
        }
    }
    problems
}

/// After a simulated power loss (or process crash) the recovered `state`
/// must equal `start` with a prefix of `history` applied, a prefix holding
/// at least every entry before `min_len`. Returns the prefix length.
pub fn check_prefix(
    start: &[u32],
    history: &[HistoryEntry],
    min_len: usize,
    state: &[u32],
) -> Result<usize, Problems> {
    let mut current = start.to_vec();
    for entry in &history[..min_len] {
        for &(i, base) in &entry.ops {
            current[i as usize] = base;
        }
    }
    let mut wrong: std::collections::BTreeSet<u32> = (0..state.len() as u32)
        .filter(|&i| current[i as usize] != state[i as usize])
        .collect();
    let mut best = (wrong.len(), min_len);
    for (n, entry) in history.iter().enumerate().skip(min_len) {
        if wrong.is_empty() {
            return Ok(n);
        }
        for &(i, base) in &entry.ops {
            current[i as usize] = base;
            if base == state[i as usize] {
                wrong.remove(&i);
            } else {
                wrong.insert(i);
            }
        }
        if wrong.len() < best.0 {
            best = (wrong.len(), n + 1);
        }
    }
    if wrong.is_empty() {
        return Ok(history.len());
    }
    // Describe the closest prefix.
    let mut closest = start.to_vec();
    for entry in &history[..best.1] {
        for &(i, base) in &entry.ops {
            closest[i as usize] = base;
        }
    }
    let mut problems = vec![format!(
        "recovered state is no prefix of the {} writes (at least {min_len} required); \
         closest is the first {} writes, {} keys differ",
        history.len(),
        best.1,
        best.0
    )];
    for i in (0..state.len())
        .filter(|&i| closest[i] != state[i])
        .take(10)
    {
        let last_write = history
            .iter()
            .rposition(|e| e.ops.iter().any(|&(k, _)| k as usize == i));
        problems.push(format!(
            "key {}: expected {}, actual {} (last written by write #{}{})",
            describe(&key(i as u32)),
            describe_base(closest[i]),
            describe_base(state[i]),
            last_write.map_or("-".into(), |n| n.to_string()),
            last_write.map_or("", |n| if history[n].sync { ", synced" } else { "" }),
        ));
    }
    Err(problems)
}

/// The shortest prefix a recovery must keep: through the last acknowledged
/// synced write (power loss), or the last acknowledged write (process crash).
pub fn required_prefix(history: &[HistoryEntry], power_loss: bool) -> usize {
    history
        .iter()
        .rposition(|e| e.acked && (e.sync || !power_loss))
        .map_or(0, |n| n + 1)
}

/// A fully resolved shadow: every slot's acknowledged base.
pub fn acked_bases(slots: &[Slot]) -> Vec<u32> {
    slots.iter().map(|s| s.acked).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(ops: &[(u32, u32)], sync: bool, acked: bool) -> HistoryEntry {
        HistoryEntry {
            ops: ops.to_vec(),
            sync,
            acked,
        }
    }

    #[test]
    fn prefix_check_accepts_prefixes_only() {
        let start = [0, 0, 0];
        let history = [
            entry(&[(0, 5)], false, true),
            entry(&[(1, 6), (2, 7)], true, true),
            entry(&[(0, 8)], false, true),
            entry(&[(1, 0)], false, false),
        ];
        assert_eq!(required_prefix(&history, true), 2);
        assert_eq!(required_prefix(&history, false), 3);
        assert_eq!(check_prefix(&start, &history, 2, &[5, 6, 7]), Ok(2));
        assert_eq!(check_prefix(&start, &history, 2, &[8, 0, 7]), Ok(4));
        // Lost a synced write.
        assert!(check_prefix(&start, &history, 2, &[5, 0, 0]).is_err());
        // Half a batch.
        let err = check_prefix(&start, &history, 0, &[5, 6, 0]).unwrap_err();
        assert!(err[0].contains("no prefix"), "{err:?}");
        assert!(
            err[0].contains("closest is the first 1 writes, 1 keys differ"),
            "{err:?}"
        );
        assert!(
            err[1].contains("expected absent, actual value#00000006"),
            "{err:?}"
        );
        // A later write without an earlier one.
        assert!(check_prefix(&start, &history, 0, &[8, 0, 0]).is_err());
    }

    #[test]
    fn recovery_check_allows_old_or_new_and_whole_batches() {
        let e = Expected::in_memory(4, 1);
        e.write(&[(0, 3)], false, || Ok::<(), ()>(()))
            .unwrap()
            .unwrap();
        let _ = e.write(&[(1, 4), (2, 5)], false, || Err(())).unwrap();
        assert!(check_recovered(&[3, 0, 0, 0], &e).is_empty());
        assert!(check_recovered(&[3, 4, 5, 0], &e).is_empty());
        let lost = check_recovered(&[0, 0, 0, 0], &e);
        assert!(lost[0].contains("acknowledged write lost"), "{lost:?}");
        let phantom = check_recovered(&[3, 0, 0, 9], &e);
        assert!(phantom[0].contains("resurrected"), "{phantom:?}");
        let torn = check_recovered(&[3, 4, 0, 0], &e);
        assert!(torn[0].contains("applied partially"), "{torn:?}");
    }
}
