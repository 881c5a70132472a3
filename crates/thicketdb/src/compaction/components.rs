//! Splitting a compaction's tables into groups with connected key ranges.
//!
//! Tables whose ranges chain together must be merged together; groups are
//! disjoint, so each is merged on its own and their outputs never overlap.
//! A group of a single movable table needs no merge at all: it changes
//! level (or run) by metadata only — the split storing that gives SifrDB
//! and BoLT LevelDB's advantage on sequential loads.

use std::sync::Arc;

use super::task::TaskInput;
use crate::format::KeyOrder;
use crate::version::TableMeta;

/// Splits `(level, run, table)` items into merge groups (inputs ordered
/// newest first: lower level, then higher run id) and moves; a lone table
/// becomes a move when `movable(level, table)`.
pub fn split_components(
    mut items: Vec<(usize, u64, Arc<TableMeta>)>,
    order: &KeyOrder,
    movable: impl Fn(usize, &TableMeta) -> bool,
) -> (Vec<Vec<TaskInput>>, Vec<TaskInput>) {
    items.sort_by(|a, b| order.user(a.2.smallest_user_key(), b.2.smallest_user_key()));
    let mut components: Vec<Vec<(usize, u64, Arc<TableMeta>)>> = Vec::new();
    let mut reach: Vec<u8> = Vec::new();
    for item in items {
        let (small, large) = (item.2.smallest_user_key(), item.2.largest_user_key());
        match components.last_mut() {
            Some(c) if order.le(small, &reach) => {
                if order.lt(&reach, large) {
                    reach = large.to_vec();
                }
                c.push(item);
            }
            _ => {
                reach = large.to_vec();
                components.push(vec![item]);
            }
        }
    }
    let mut merges = Vec::new();
    let mut moves: Vec<TaskInput> = Vec::new();
    for component in components {
        if let [(level, run, table)] = component.as_slice() {
            // A log table is always rewritten: its values are its logs,
            // which only L0 keeps (TRIAD-LOG).
            if movable(*level, table) && !table.is_log_table() {
                match moves
                    .iter_mut()
                    .find(|m| m.level == *level && m.run == *run)
                {
                    Some(m) => m.tables.push(table.clone()),
                    None => moves.push(TaskInput {
                        level: *level,
                        run: *run,
                        tables: vec![table.clone()],
                    }),
                }
                continue;
            }
        }
        let mut inputs: Vec<TaskInput> = Vec::new();
        for (level, run, table) in component {
            match inputs.iter_mut().find(|i| i.level == level && i.run == run) {
                Some(input) => input.tables.push(table),
                None => inputs.push(TaskInput {
                    level,
                    run,
                    tables: vec![table],
                }),
            }
        }
        inputs.sort_by(|a, b| a.level.cmp(&b.level).then(b.run.cmp(&a.run)));
        for input in &mut inputs {
            input
                .tables
                .sort_by(|a, b| order.internal(&a.smallest, &b.smallest));
        }
        merges.push(inputs);
    }
    (merges, moves)
}
