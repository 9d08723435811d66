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
                let shown: Vec<RecordBatch> =
                    batches.iter().map(round_floats).collect::<Result<_, _>>()?;
                writeln!(
                    out,
                    "{}",
                    arrow::util::pretty::pretty_format_batches(&shown)?
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_floats() {
        assert_eq!(human_float(0.497_777), "0.4978");
        assert_eq!(human_float(24.052_686), "24.05");
        assert_eq!(human_float(1_551_605_803.779), "1.552e9");
        assert_eq!(human_float(5.2e-114), "5.200e-114");
        assert_eq!(human_float(3.0), "3");
        assert_eq!(human_float(-0.25), "-0.25");
    }

    #[test]
    fn json_and_csv_keep_full_precision() {
        let b = batch(vec![("x", Col::F64(vec![Some(0.123_456_789), None]))]).unwrap();
        let mut out = Vec::new();
        render(std::slice::from_ref(&b), OutputFormat::Json, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap().trim(),
            r#"[{"x":0.123456789},{"x":null}]"#
        );
        let mut out = Vec::new();
        render(std::slice::from_ref(&b), OutputFormat::Table, &mut out).unwrap();
        assert!(String::from_utf8(out).unwrap().contains("0.1235"));
    }
}

/// A float for people: four significant digits, scientific notation when very large or small.
pub fn human_float(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    if x == 0.0 {
        return "0".into();
    }
    let a = x.abs();
    if !(1e-3..1e7).contains(&a) {
        return format!("{x:.3e}");
    }
    let digits = (3 - a.log10().floor() as i32).clamp(0, 6) as usize;
    let s = format!("{x:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Table display only: float columns become text with [`human_float`] (CSV and JSON keep full
/// precision).
fn round_floats(b: &RecordBatch) -> Result<RecordBatch, arrow::error::ArrowError> {
    use arrow::array::{Array, ArrayRef, Float64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;
    let schema = b.schema();
    let mut fields = Vec::new();
    let mut cols: Vec<ArrayRef> = Vec::new();
    for (f, c) in schema.fields().iter().zip(b.columns()) {
        match c.as_any().downcast_ref::<Float64Array>() {
            Some(a) if f.data_type() == &DataType::Float64 => {
                let v: StringArray = (0..a.len())
                    .map(|i| (!a.is_null(i)).then(|| human_float(a.value(i))))
                    .collect();
                fields.push(Field::new(f.name(), DataType::Utf8, true));
                cols.push(Arc::new(v));
            }
            _ => {
                fields.push(f.as_ref().clone());
                cols.push(c.clone());
            }
        }
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)
}

/// A column of a result table built in Rust (rather than returned by DuckDB).
#[derive(Debug, Clone)]
pub enum Col {
    /// Floating-point values (null where `None` or not finite).
    F64(Vec<Option<f64>>),
    /// Integers.
    I64(Vec<Option<i64>>),
    /// Text.
    Str(Vec<Option<String>>),
    /// Booleans.
    Bool(Vec<Option<bool>>),
}

/// Builds one record batch from named columns of equal length.
pub fn batch(cols: Vec<(&str, Col)>) -> Result<RecordBatch, RenderError> {
    use arrow::array::{ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;
    let mut fields = Vec::with_capacity(cols.len());
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(cols.len());
    for (name, col) in cols {
        let (dt, arr): (DataType, ArrayRef) = match col {
            Col::F64(v) => (
                DataType::Float64,
                Arc::new(Float64Array::from(
                    v.into_iter()
                        .map(|x| x.filter(|f| f.is_finite()))
                        .collect::<Vec<_>>(),
                )),
            ),
            Col::I64(v) => (DataType::Int64, Arc::new(Int64Array::from(v))),
            Col::Str(v) => (DataType::Utf8, Arc::new(StringArray::from(v))),
            Col::Bool(v) => (DataType::Boolean, Arc::new(BooleanArray::from(v))),
        };
        fields.push(Field::new(name, dt, true));
        arrays.push(arr);
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?)
}
