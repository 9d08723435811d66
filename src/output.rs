//! One renderer for every listing: Arrow record batches as a table, CSV or JSON.

use std::io::Write;

use arrow::record_batch::RecordBatch;

/// How a listing is printed (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OutputFormat {
    /// An aligned text table for people.
    #[default]
    Table,
    /// Comma-separated values with a header row.
    Csv,
    /// A JSON array of objects whose keys are the column names.
    Json,
}

/// Errors of rendering.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// Arrow could not format the batches.
    #[error("rendering failed: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    /// Writing to the output failed.
    #[error("writing output failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Writes `batches` to `out` in `format`. An empty result prints an empty table, a CSV header
/// only when the schema is known, or `[]`.
pub fn render(
    batches: &[RecordBatch],
    format: OutputFormat,
    out: &mut dyn Write,
) -> Result<(), RenderError> {
    match format {
        OutputFormat::Table => {
            if batches.iter().all(|b| b.num_rows() == 0) {
                writeln!(out, "(no rows)")?;
            } else {
                writeln!(
                    out,
                    "{}",
                    arrow::util::pretty::pretty_format_batches(batches)?
                )?;
            }
        }
        OutputFormat::Csv => {
            let mut w = arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(&mut *out);
            for b in batches {
                w.write(b)?;
            }
        }
        OutputFormat::Json => {
            let mut buf = Vec::new();
            {
                let mut w = arrow::json::WriterBuilder::new()
                    .with_explicit_nulls(true)
                    .build::<_, arrow::json::writer::JsonArray>(&mut buf);
                for b in batches {
                    w.write(b)?;
                }
                w.finish()?;
            }
            if buf.is_empty() {
                buf.extend_from_slice(b"[]");
            }
            out.write_all(&buf)?;
            writeln!(out)?;
        }
    }
    Ok(())
}
