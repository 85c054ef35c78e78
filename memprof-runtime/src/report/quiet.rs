//! The allocations and frees of a function's quiet calls (see
//! `quiet_events`), placed on its rows: each return address into one of
//! the function's frames is mapped to its line through the debug
//! information, and the line to the statement that holds it (the nearest
//! statement row at or above it) and the statements whose blocks hold that
//! one, as their rows' regions would have, so that Increment, Allocs and
//! Allocated of a line count the line's events in every call, quiet or not.

use crate::calls::FnMeta;
use crate::cells::RowFigures;
use crate::quiet_events::Tally;
use std::collections::HashMap;

/// Adds the events of `meta`'s quiet calls to its cells' figures (`cells`,
/// one per cell): each event once on each distinct statement that its
/// frames of the function were on (a recursion's frames on one statement
/// count once, as a recursion's executions of a row do). Returns how many
/// events could not be placed on a statement (a frame the walk did not
/// reach, no debug information, or a line that is the `fn` row's): the
/// `fn` row holds them, as it holds every quiet call whole.
pub(super) fn place(meta: &FnMeta, cells: &mut [RowFigures]) -> u64 {
    let events = meta.quiet_events();
    if events.is_empty() {
        return 0;
    }
    let span = crate::sites::Span {
        name: meta.name(),
        file: meta.file,
        first_line: meta.first_line,
        last_line: meta.first_line + meta.rows.len().saturating_sub(1) as u32,
    };
    let mut unplaced = 0;
    for (addresses, tally) in events {
        let mut statements: Vec<usize> = Vec::new();
        let mut missed = false;
        for &address in addresses.iter() {
            let cell = (address != 0)
                .then(|| crate::sites::line_of(address, &span))
                .flatten()
                .and_then(|line| statement_at(meta.cell_rows, line - meta.first_line));
            match cell {
                Some(cell) => {
                    for cell in enclosing(meta, cell) {
                        if !statements.contains(&cell) {
                            statements.push(cell);
                        }
                    }
                }
                None => missed = true,
            }
        }
        for &cell in &statements {
            if let Some(figures) = cells.get_mut(cell) {
                add(figures, &tally);
            }
        }
        if missed {
            unplaced += tally.allocations + tally.frees;
        }
    }
    unplaced
}

/// What `sites` asks to place a block in use that was allocated while no
/// row of `meta` was open (see `sites::QuietRows`): if a return address of
/// its stack is in the function's own frame, the `fn` row (which holds
/// every quiet call whole) and the rows of the statements its frames were
/// on, as [`place`] places the events; otherwise none. Each address is
/// looked up once.
pub(super) fn in_use_rows<'a>(
    meta: &'a FnMeta,
    span: &'a crate::sites::Span<'a>,
) -> impl FnMut(&[usize]) -> Vec<u32> + 'a {
    let mut seen: HashMap<usize, Option<Option<u32>>> = HashMap::new();
    move |frames| {
        let mut rows = Vec::new();
        for &address in frames {
            // `None`: not the function's frame; `Some(None)`: its frame,
            // on no statement.
            let found = *seen.entry(address).or_insert_with(|| {
                (address != 0 && crate::sites::in_own_frame(address, span)).then(|| {
                    crate::sites::line_of(address, span)
                        .and_then(|line| statement_at(meta.cell_rows, line - meta.first_line))
                        .map(|cell| cell as u32)
                })
            });
            let Some(cell) = found else {
                continue;
            };
            if rows.is_empty() {
                rows.extend(meta.cell_rows.first().copied());
            }
            for cell in cell
                .map(|c| enclosing(meta, c as usize))
                .unwrap_or_default()
            {
                rows.extend(meta.cell_rows.get(cell).copied());
            }
        }
        rows
    }
}

/// The cell of the statement that holds row `row` (a line's offset from
/// the function's first): the first cell of the nearest row at or above it
/// that has one, not the `fn` row's (cell 0).
fn statement_at(cell_rows: &[u32], row: u32) -> Option<usize> {
    let fn_row = *cell_rows.first()?;
    let nearest = cell_rows
        .iter()
        .copied()
        .filter(|&r| r <= row && r != fn_row)
        .max()?;
    cell_rows.iter().position(|&r| r == nearest)
}

/// `cell` and the cells of the statements whose blocks hold it, innermost
/// first (`FnMeta::cell_parents`), short of the `fn` row (cell 0), which
/// holds every quiet call whole already.
fn enclosing(meta: &FnMeta, cell: usize) -> Vec<usize> {
    let mut cells = vec![cell];
    let mut at = cell;
    while let Some(&parent) = meta.cell_parents.get(at) {
        let Some(outer) = meta.cell_rows.iter().position(|&r| r == parent) else {
            break;
        };
        if outer == 0 || cells.contains(&outer) {
            break;
        }
        cells.push(outer);
        at = outer;
    }
    cells
}

fn add(figures: &mut RowFigures, tally: &Tally) {
    figures.allocations = figures.allocations.saturating_add(tally.allocations);
    figures.allocated = figures.allocated.saturating_add(tally.allocated);
    figures.increment = figures.increment.saturating_add(tally.net);
}

#[cfg(test)]
mod tests {
    use super::statement_at;

    #[test]
    fn a_line_belongs_to_the_nearest_statement_at_or_above_it() {
        // Cell 0 is the `fn` row (row 1); statements on rows 2, 3 and 6;
        // a second cell on row 3 (a scope's end).
        let rows = [1, 2, 3, 3, 6];
        assert_eq!(statement_at(&rows, 2), Some(1));
        assert_eq!(statement_at(&rows, 3), Some(2));
        // A statement's second and third lines.
        assert_eq!(statement_at(&rows, 4), Some(2));
        assert_eq!(statement_at(&rows, 5), Some(2));
        assert_eq!(statement_at(&rows, 9), Some(4));
        // The `fn` row's line, or above it: no statement.
        assert_eq!(statement_at(&rows, 1), None);
        assert_eq!(statement_at(&rows, 0), None);
    }
}
