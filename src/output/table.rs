//! Tables people read: at most [`TABLE_ROWS`] rows on a terminal (the first and last half and
//! how many are between, like DuckDB's CLI), or every row streamed in two passes (column
//! widths, then rows) so a table of millions of rows costs no more memory than CSV.

use std::io::Write;

use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};

use super::{render, text_batch, OutputFormat, RenderError};

/// Rows a table on standard output shows before it elides its middle (the first and the last
/// half of them, and how many are between).
pub const TABLE_ROWS: usize = 40;

/// How a table prints its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableRows {
    /// Every row, streamed (column widths from a first pass, no table held in memory).
    All,
    /// At most [`TABLE_ROWS`]: the first and last half, with the count of rows between.
    Elided,
}

/// Rows per slice while a table streams.
const STREAM_ROWS: usize = 4096;

/// A table of `batches`: elided to [`TABLE_ROWS`] or every row streamed. Both read the same
/// text of each value as [`render`]'s table.
pub fn render_table(
    batches: &[RecordBatch],
    rows: TableRows,
    out: &mut dyn Write,
) -> Result<(), RenderError> {
    let total: usize = batches.iter().map(|b| b.num_rows()).sum();
    if total <= TABLE_ROWS {
        return render(batches, OutputFormat::Table, out);
    }
    match rows {
        TableRows::Elided => {
            let half = TABLE_ROWS / 2;
            let mut shown = Vec::new();
            for (from, len) in [(0, half), (total - half, half)] {
                shown.extend(slice_rows(batches, from, len));
            }
            let shown: Vec<RecordBatch> = shown
                .iter()
                .map(|b| text_batch(b, true))
                .collect::<Result<_, _>>()?;
            let text = arrow::util::pretty::pretty_format_batches(&shown)?.to_string();
            let lines: Vec<&str> = text.lines().collect();
            // Border, header, border, then the rows: the marker goes after the first half.
            for (i, l) in lines.iter().enumerate() {
                writeln!(out, "{l}")?;
                if i == 2 + half {
                    let inner = l.chars().count().saturating_sub(2);
                    let msg = format!(
                        "… {} more rows (--all prints every row; csv and json always do) …",
                        total - TABLE_ROWS
                    );
                    let msg: String = msg.chars().take(inner).collect();
                    writeln!(out, "|{msg:^inner$}|")?;
                }
            }
            Ok(())
        }
        TableRows::All => stream_table(batches, out),
    }
}

/// The columns of `batches` that fit a table `width` characters wide, left to right (the first
/// always), and the names of the others: the default table view keeps to the terminal, and
/// `--wide` (or csv, json, parquet) shows every column, as DuckDB's and DataFusion's CLIs do.
pub fn fit_width(
    batches: &[RecordBatch],
    width: usize,
) -> Result<(Vec<RecordBatch>, Vec<String>), RenderError> {
    let Some(first) = batches.first() else {
        return Ok((batches.to_vec(), Vec::new()));
    };
    let schema = first.schema();
    let mut widths: Vec<usize> = schema
        .fields()
        .iter()
        .map(|f| f.name().chars().count())
        .collect();
    let opts = FormatOptions::default();
    for b in batches {
        let t = text_batch(b, true)?;
        for (w, c) in widths.iter_mut().zip(t.columns()) {
            let fmt = ArrayFormatter::try_new(c.as_ref(), &opts)?;
            for i in 0..c.len() {
                *w = (*w).max(fmt.value(i).to_string().chars().count());
            }
        }
    }
    // A column takes its width and "| " before and " " after; the table ends with "|".
    let mut used = 1;
    let mut keep = Vec::new();
    let mut hidden = Vec::new();
    for (i, w) in widths.iter().enumerate() {
        if keep.is_empty() || (hidden.is_empty() && used + w + 3 <= width) {
            used += w + 3;
            keep.push(i);
        } else {
            hidden.push(schema.field(i).name().clone());
        }
    }
    if hidden.is_empty() {
        return Ok((batches.to_vec(), hidden));
    }
    let kept = batches
        .iter()
        .map(|b| b.project(&keep))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((kept, hidden))
}

/// The line under a table that left columns out: how many, which, and how to see them.
pub fn hidden_note(hidden: &[String]) -> String {
    let s = if hidden.len() == 1 { "" } else { "s" };
    format!(
        "{} more column{s} (--wide shows them; csv and json have every column): {}",
        hidden.len(),
        hidden.join(", ")
    )
}

/// `len` rows from row `from` of the concatenation of `batches`, as zero-copy slices.
fn slice_rows(batches: &[RecordBatch], mut from: usize, mut len: usize) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    for b in batches {
        if len == 0 {
            break;
        }
        if from >= b.num_rows() {
            from -= b.num_rows();
            continue;
        }
        let n = len.min(b.num_rows() - from);
        out.push(b.slice(from, n));
        len -= n;
        from = 0;
    }
    out
}

/// Every row as a table in two passes over the values (widths, then rows), a slice at a time.
fn stream_table(batches: &[RecordBatch], out: &mut dyn Write) -> Result<(), RenderError> {
    let Some(first) = batches.first() else {
        return render(batches, OutputFormat::Table, out);
    };
    let names: Vec<String> = first
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().to_string())
        .collect();
    let mut widths: Vec<usize> = names.iter().map(|n| n.chars().count()).collect();
    let opts = FormatOptions::default();
    let each_slice = |f: &mut dyn FnMut(&RecordBatch) -> Result<(), RenderError>| {
        for b in batches {
            let mut at = 0;
            while at < b.num_rows() {
                let n = STREAM_ROWS.min(b.num_rows() - at);
                f(&text_batch(&b.slice(at, n), true)?)?;
                at += n;
            }
        }
        Ok::<(), RenderError>(())
    };
    each_slice(&mut |t: &RecordBatch| {
        for (w, c) in widths.iter_mut().zip(t.columns()) {
            let fmt = ArrayFormatter::try_new(c.as_ref(), &opts)?;
            for i in 0..c.len() {
                *w = (*w).max(fmt.value(i).to_string().chars().count());
            }
        }
        Ok(())
    })?;
    let border: String = widths
        .iter()
        .map(|w| format!("+{}", "-".repeat(w + 2)))
        .collect::<String>()
        + "+";
    let row = |cells: &[String]| -> String {
        let mut l = String::new();
        for (c, w) in cells.iter().zip(&widths) {
            let pad = w.saturating_sub(c.chars().count());
            l.push_str(&format!("| {c}{} ", " ".repeat(pad)));
        }
        l.push('|');
        l
    };
    writeln!(out, "{border}")?;
    writeln!(out, "{}", row(&names))?;
    writeln!(out, "{border}")?;
    each_slice(&mut |t: &RecordBatch| {
        let fmts = t
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts))
            .collect::<Result<Vec<_>, _>>()?;
        for i in 0..t.num_rows() {
            let cells: Vec<String> = fmts.iter().map(|f| f.value(i).to_string()).collect();
            writeln!(out, "{}", row(&cells))?;
        }
        Ok(())
    })?;
    writeln!(out, "{border}")?;
    Ok(())
}
