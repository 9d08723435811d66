//! The regime map's layout: the last axis of a sweep across, every combination of the other
//! axes down (a one-axis sweep lists its values down), each slot holding one cell; axes with a
//! single value among the cells laid out are left out. The TUI's
//! Sweep screen and the report's heatmap draw this one layout.

use super::cell::CellResult;

/// One axis of a sweep: its scenario key and its values in grid order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepAxis {
    /// Dotted scenario key (`k1+k2` for a joint axis).
    pub key: String,
    /// Values, as text, in grid order.
    pub values: Vec<String>,
}

/// Rows, columns and the cell in each slot.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MapLayout {
    /// The axes, in grid order.
    pub axes: Vec<SweepAxis>,
    /// Map rows: the values of the row axes (every axis but the column axis).
    pub rows: Vec<Vec<String>>,
    /// Map columns: the values of the column axis (one unnamed column when there is none).
    pub columns: Vec<String>,
    /// `grid[row][column]`: index of the cell (in the order given) in that slot.
    pub grid: Vec<Vec<Option<usize>>>,
}

impl MapLayout {
    /// Lays out `cells`, in grid order.
    pub fn of<'a>(cells: impl IntoIterator<Item = &'a CellResult>) -> MapLayout {
        let cells: Vec<&CellResult> = cells.into_iter().collect();
        let mut axes: Vec<SweepAxis> = Vec::new();
        for c in &cells {
            for (k, v) in &c.axes {
                match axes.iter_mut().find(|a| &a.key == k) {
                    Some(a) if !a.values.contains(v) => a.values.push(v.clone()),
                    Some(_) => {}
                    None => axes.push(SweepAxis {
                        key: k.clone(),
                        values: vec![v.clone()],
                    }),
                }
            }
        }
        // An axis with one value among these cells (a slice of a sweep) is not drawn.
        if cells.len() > 1 {
            axes.retain(|a| a.values.len() > 1);
        }
        // The last axis goes across, unless it is the only one.
        let across = (axes.len() >= 2).then(|| axes.len() - 1);
        let columns = match across {
            Some(i) => axes[i].values.clone(),
            None => vec![String::new()],
        };
        let mut rows: Vec<Vec<String>> = Vec::new();
        let mut grid: Vec<Vec<Option<usize>>> = Vec::new();
        for (i, c) in cells.iter().enumerate() {
            let value = |k: &str| {
                c.axes
                    .iter()
                    .find(|(ak, _)| ak == k)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default()
            };
            let row_key: Vec<String> = axes
                .iter()
                .enumerate()
                .filter(|(j, _)| Some(*j) != across)
                .map(|(_, a)| value(&a.key))
                .collect();
            let col = across.map_or(0, |a| {
                let v = value(&axes[a].key);
                columns.iter().position(|x| *x == v).unwrap_or(0)
            });
            let r = match rows.iter().position(|x| *x == row_key) {
                Some(r) => r,
                None => {
                    rows.push(row_key);
                    grid.push(vec![None; columns.len()]);
                    rows.len() - 1
                }
            };
            grid[r][col] = Some(i);
        }
        MapLayout {
            axes,
            rows,
            columns,
            grid,
        }
    }

    /// The keys of the row axes (every axis but the column axis), in grid order.
    pub fn row_axes(&self) -> Vec<&str> {
        let n = if self.axes.len() >= 2 {
            self.axes.len() - 1
        } else {
            self.axes.len()
        };
        self.axes[..n].iter().map(|a| a.key.as_str()).collect()
    }

    /// The key of the column axis, when the map has one.
    pub fn column_axis(&self) -> Option<&str> {
        (self.axes.len() >= 2).then(|| self.axes[self.axes.len() - 1].key.as_str())
    }

    /// The (row, column) of cell `i`.
    pub fn slot_of(&self, i: usize) -> Option<(usize, usize)> {
        self.grid
            .iter()
            .enumerate()
            .find_map(|(r, row)| row.iter().position(|x| *x == Some(i)).map(|c| (r, c)))
    }
}
