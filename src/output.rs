//! One output path for every command: a result is one table (Arrow record batches), and
//! [`emit`] writes it as an aligned text table, CSV, a JSON array of objects or Parquet, to
//! standard output or (atomically) to a file.
//!
//! Every Arrow type DuckDB returns can be shown: numbers, booleans and text as themselves;
//! timestamps with a time zone as RFC 3339 UTC instants (`2019-03-20T00:00:00Z`); nested values
//! (lists, structs, maps, unions) as JSON; everything else (decimals, dates, times, intervals,
//! blobs, ...) as Arrow displays it. Notes about a result belong on standard error: a
//! machine-readable format holds the table and nothing else.
//!
//! Size: one concept, turning any Arrow column into each format's text; the formats share
//! the per-type conversions (JSON tokens are also the text of nested values in a table), so
//! they stay together (the aligned-table layout lives in `table`).

mod table;

pub use table::{fit_width, hidden_note, render_table, TableRows, TABLE_ROWS};

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StringArray};
use arrow::datatypes::{
    DataType, Field, Float16Type, Float32Type, Float64Type, IntervalUnit, Schema, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType,
};
use arrow::error::ArrowError;
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};

/// How a result is written (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OutputFormat {
    /// An aligned text table for people.
    #[default]
    Table,
    /// Comma-separated values with a header row.
    Csv,
    /// A JSON array of objects keyed by column name.
    Json,
    /// Parquet (binary: give --out FILE, or redirect standard output to a file).
    Parquet,
}

/// Errors of writing a result.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A column could not be formatted.
    #[error("cannot show column {column:?} of type {data_type}")]
    Column {
        /// The column name.
        column: String,
        /// Its Arrow type.
        data_type: DataType,
        /// What Arrow said.
        source: ArrowError,
    },
    /// Arrow could not build or format the table.
    #[error("formatting the result failed")]
    Arrow(#[from] ArrowError),
    /// Encoding Parquet failed.
    #[error("encoding Parquet failed")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// Writing to standard output failed.
    #[error("writing the output failed")]
    Io(#[from] std::io::Error),
    /// Parquet asked for on a terminal.
    #[error(
        "--format parquet writes binary data: pass --out FILE, or redirect standard output to a file"
    )]
    ParquetToTerminal,
    /// Parquet asked for a result without a schema (a query that returned no batch at all).
    #[error("the result has no schema, so there is no Parquet file to write")]
    NoSchema,
    /// Writing the output file failed.
    #[error(transparent)]
    File(#[from] crate::store::StoreError),
}

/// Writes `batches` (one table) in `format` to `out`, or to standard output when `out` is `None`.
/// A file is written atomically (temporary file, fsync, rename; see
/// [`crate::store::replace_file`]). Parquet is refused on a terminal.
pub(crate) fn emit(
    batches: &[RecordBatch],
    format: OutputFormat,
    out: Option<&Path>,
) -> Result<(), RenderError> {
    emit_rows(batches, format, out, TableRows::All)
}

/// [`emit`], with the rows a table shows on standard output (a table written to a file has
/// every row).
pub(crate) fn emit_rows(
    batches: &[RecordBatch],
    format: OutputFormat,
    out: Option<&Path>,
    rows: TableRows,
) -> Result<(), RenderError> {
    match out {
        None => {
            let stdout = std::io::stdout();
            if format == OutputFormat::Parquet && stdout.is_terminal() {
                return Err(RenderError::ParquetToTerminal);
            }
            let mut lock = stdout.lock();
            if format == OutputFormat::Table {
                render_table(batches, rows, &mut lock)?;
            } else {
                render(batches, format, &mut lock)?;
            }
            lock.flush()?;
            Ok(())
        }
        Some(path) => write_file(path, |w| render(batches, format, w)),
    }
}

/// Writes `path` atomically ([`crate::store::replace_file`]) with what `fill` writes.
fn write_file(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> Result<(), RenderError>,
) -> Result<(), RenderError> {
    crate::store::replace_file(path, |tmp| {
        let file = std::fs::File::create(tmp).map_err(crate::store::io_err(path))?;
        let mut w = std::io::BufWriter::new(file);
        fill(&mut w)?;
        w.flush().map_err(crate::store::io_err(path))?;
        Ok::<(), RenderError>(())
    })
}

/// Writes a JSON document (pretty, with a final newline) to `out`, or to standard output when
/// `out` is `None`: the JSON of results whose rows are nested objects (a policy comparison, a
/// regime map), on the same path as [`emit`] (a file is written atomically).
pub(crate) fn emit_json(value: &serde_json::Value, out: Option<&Path>) -> Result<(), RenderError> {
    let write = |w: &mut dyn Write| -> Result<(), RenderError> {
        serde_json::to_writer_pretty(&mut *w, value)
            .map_err(|e| RenderError::Io(std::io::Error::other(e)))?;
        writeln!(w)?;
        Ok(())
    };
    match out {
        None => {
            let stdout = std::io::stdout();
            let mut lock = stdout.lock();
            write(&mut lock)?;
            lock.flush()?;
            Ok(())
        }
        Some(path) => write_file(path, write),
    }
}

/// Writes `batches` in `format` to `out`. An empty result is `(no rows)` as a table, the header
/// only (when the schema is known) as CSV, `[]` as JSON, and a file without rows as Parquet.
/// Parquet keeps every type it can hold; unions and month-day-nano intervals (which it cannot)
/// become text.
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
                let shown: Vec<RecordBatch> = batches
                    .iter()
                    .map(|b| text_batch(b, true))
                    .collect::<Result<_, _>>()?;
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
                w.write(&text_batch(b, false)?)?;
            }
        }
        OutputFormat::Json => {
            out.write_all(b"[")?;
            let mut first = true;
            for b in batches {
                let schema = b.schema();
                let keys: Vec<String> = schema
                    .fields()
                    .iter()
                    .map(|f| json_string(f.name()))
                    .collect();
                let cols: Vec<JsonColumn> = schema
                    .fields()
                    .iter()
                    .zip(b.columns())
                    .map(|(f, c)| JsonColumn::new(c.as_ref()).map_err(|e| column_error(f, e)))
                    .collect::<Result<_, _>>()?;
                // Rows are formatted in blocks by one worker per core, which run ahead (at
                // most two blocks each) while this thread writes the blocks in order.
                let write_rows = |rows: std::ops::Range<usize>, buf: &mut Vec<u8>| {
                    for row in rows {
                        buf.extend_from_slice(b",{");
                        for (k, (key, col)) in keys.iter().zip(&cols).enumerate() {
                            if k > 0 {
                                buf.push(b',');
                            }
                            buf.extend_from_slice(key.as_bytes());
                            buf.push(b':');
                            col.write(row, buf);
                        }
                        buf.push(b'}');
                    }
                };
                let threads = std::thread::available_parallelism()
                    .map_or(1, |n| n.get())
                    .min(8);
                let n = b.num_rows();
                let blocks = n.div_ceil(JSON_BLOCK_ROWS);
                let result: std::io::Result<()> = std::thread::scope(|sc| {
                    let (tx, rx) = std::sync::mpsc::sync_channel::<(usize, Vec<u8>)>(2 * threads);
                    for t in 0..threads {
                        let tx = tx.clone();
                        let write_rows = &write_rows;
                        sc.spawn(move || {
                            for k in (t..blocks).step_by(threads) {
                                let rows = k * JSON_BLOCK_ROWS..((k + 1) * JSON_BLOCK_ROWS).min(n);
                                let mut buf = Vec::with_capacity(rows.len() * 64);
                                write_rows(rows, &mut buf);
                                // The writer has stopped (an error): stop too.
                                if tx.send((k, buf)).is_err() {
                                    return;
                                }
                            }
                        });
                    }
                    drop(tx);
                    let mut pending: std::collections::BTreeMap<usize, Vec<u8>> =
                        std::collections::BTreeMap::new();
                    let mut next = 0;
                    for (k, buf) in rx {
                        pending.insert(k, buf);
                        while let Some(buf) = pending.remove(&next) {
                            // The very first row has no leading comma.
                            let body = if first && !buf.is_empty() {
                                first = false;
                                &buf[1..]
                            } else {
                                &buf[..]
                            };
                            out.write_all(body)?;
                            next += 1;
                        }
                    }
                    Ok(())
                });
                result?;
            }
            out.write_all(b"]\n")?;
        }
        OutputFormat::Parquet => {
            let batches: Vec<RecordBatch> = batches
                .iter()
                .map(parquet_ready)
                .collect::<Result<_, _>>()?;
            let schema = batches.first().ok_or(RenderError::NoSchema)?.schema();
            let mut buf = Vec::new();
            {
                let props = parquet::file::properties::WriterProperties::builder()
                    .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
                    .build();
                let mut w =
                    parquet::arrow::ArrowWriter::try_new(&mut buf, schema.clone(), Some(props))?;
                for b in &batches {
                    w.write(b)?;
                }
                w.close()?;
            }
            out.write_all(&buf)?;
        }
    }
    Ok(())
}

/// The batch with every column the Parquet writer cannot hold (unions and month-day-nano
/// intervals, anywhere inside the type) as the text of its values.
fn parquet_ready(b: &RecordBatch) -> Result<RecordBatch, RenderError> {
    fn unwritable(t: &DataType) -> bool {
        match t {
            DataType::Union(..) | DataType::Interval(IntervalUnit::MonthDayNano) => true,
            DataType::List(f)
            | DataType::LargeList(f)
            | DataType::FixedSizeList(f, _)
            | DataType::ListView(f)
            | DataType::LargeListView(f)
            | DataType::Map(f, _) => unwritable(f.data_type()),
            DataType::Struct(fs) => fs.iter().any(|f| unwritable(f.data_type())),
            DataType::Dictionary(_, v) => unwritable(v),
            DataType::RunEndEncoded(_, v) => unwritable(v.data_type()),
            _ => false,
        }
    }
    let schema = b.schema();
    if !schema.fields().iter().any(|f| unwritable(f.data_type())) {
        return Ok(b.clone());
    }
    let mut fields = Vec::with_capacity(b.num_columns());
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(b.num_columns());
    for (f, c) in schema.fields().iter().zip(b.columns()) {
        if unwritable(f.data_type()) {
            let text = text_values(c.as_ref()).map_err(|e| column_error(f, e))?;
            fields.push(Field::new(f.name(), DataType::Utf8, true));
            cols.push(Arc::new(StringArray::from(text)));
        } else {
            fields.push(f.as_ref().clone());
            cols.push(c.clone());
        }
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}

fn column_error(f: &Field, source: ArrowError) -> RenderError {
    RenderError::Column {
        column: f.name().clone(),
        data_type: f.data_type().clone(),
        source,
    }
}

/// A JSON string literal.
fn json_string(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

/// Whether the CSV writer and the table show a type as it is (numbers, booleans, text).
fn shown_natively(t: &DataType) -> bool {
    t.is_integer()
        || t.is_floating()
        || matches!(t, DataType::Boolean | DataType::Utf8 | DataType::LargeUtf8)
}

/// Whether values of a type are shown as JSON text in the table and CSV.
fn is_nested(t: &DataType) -> bool {
    matches!(
        t,
        DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(..)
            | DataType::ListView(_)
            | DataType::LargeListView(_)
            | DataType::Struct(_)
            | DataType::Map(..)
            | DataType::Union(..)
    )
}

/// The batch as the table or the CSV writer shows it: native numbers, booleans and text; every
/// other column as text. `human` (the table) also shows floats with [`human_float`].
fn text_batch(b: &RecordBatch, human: bool) -> Result<RecordBatch, RenderError> {
    let schema = b.schema();
    let mut fields = Vec::with_capacity(b.num_columns());
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(b.num_columns());
    for (f, c) in schema.fields().iter().zip(b.columns()) {
        let t = f.data_type();
        if shown_natively(t) && !(human && t.is_floating()) {
            fields.push(f.as_ref().clone().with_nullable(true));
            cols.push(c.clone());
            continue;
        }
        let text = if human && t.is_floating() {
            let v = arrow::compute::cast(c, &DataType::Float64)?;
            let v = v.as_primitive::<Float64Type>();
            (0..v.len())
                .map(|i| (!v.is_null(i)).then(|| human_float(v.value(i))))
                .collect()
        } else {
            text_values(c.as_ref()).map_err(|e| column_error(f, e))?
        };
        fields.push(Field::new(f.name(), DataType::Utf8, true));
        cols.push(Arc::new(StringArray::from(text)));
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}

/// Null flags that also see the nulls of null-typed, union and dictionary arrays.
fn null_flags(a: &dyn Array) -> Vec<bool> {
    match a.logical_nulls() {
        Some(n) => (0..a.len()).map(|i| n.is_null(i)).collect(),
        None => vec![false; a.len()],
    }
}

/// Every value of `a` as text (`None` for null), for the table and CSV.
fn text_values(a: &dyn Array) -> Result<Vec<Option<String>>, ArrowError> {
    let nulls = null_flags(a);
    let text: Vec<String> = match a.data_type() {
        DataType::Dictionary(_, value_type) => {
            let flat = arrow::compute::cast(a, value_type)?;
            return text_values(flat.as_ref());
        }
        DataType::Timestamp(unit, Some(_)) => utc_timestamps(a, *unit),
        t if is_nested(t) => json_tokens(a)?,
        _ => {
            let fmt = ArrayFormatter::try_new(a, &FormatOptions::default())?;
            (0..a.len())
                .map(|i| {
                    if nulls[i] {
                        Ok(String::new())
                    } else {
                        fmt.value(i).try_to_string()
                    }
                })
                .collect::<Result<_, _>>()?
        }
    };
    Ok(text
        .into_iter()
        .zip(nulls)
        .map(|(s, null)| (!null).then_some(s))
        .collect())
}

/// Timestamps with a time zone as RFC 3339 UTC instants (the stored value is UTC whatever the
/// zone; Arrow would need the chrono-tz database to display a named zone).
fn utc_timestamps(a: &dyn Array, unit: TimeUnit) -> Vec<String> {
    let raw: Vec<Option<i64>> = match unit {
        TimeUnit::Second => a.as_primitive::<TimestampSecondType>().iter().collect(),
        TimeUnit::Millisecond => a
            .as_primitive::<TimestampMillisecondType>()
            .iter()
            .collect(),
        TimeUnit::Microsecond => a
            .as_primitive::<TimestampMicrosecondType>()
            .iter()
            .collect(),
        TimeUnit::Nanosecond => a.as_primitive::<TimestampNanosecondType>().iter().collect(),
    };
    raw.into_iter()
        .map(|v| v.map(|v| utc_text(unit, v)).unwrap_or_default())
        .collect()
}

fn utc_text(unit: TimeUnit, v: i64) -> String {
    use chrono::{DateTime, SecondsFormat};
    let t = match unit {
        TimeUnit::Second => DateTime::from_timestamp(v, 0),
        TimeUnit::Millisecond => DateTime::from_timestamp_millis(v),
        TimeUnit::Microsecond => DateTime::from_timestamp_micros(v),
        TimeUnit::Nanosecond => Some(DateTime::from_timestamp_nanos(v)),
    };
    match t {
        Some(t) => t.to_rfc3339_opts(SecondsFormat::AutoSi, true),
        None => format!("{v} ({unit:?} since 1970, out of range)"),
    }
}

/// Every value of `a` as a JSON token (`null` for null): numbers and booleans as themselves
/// (non-finite floats as `null`), lists as arrays, structs and maps as objects, unions as their
/// value, everything else as a JSON string of its text.
fn json_tokens(a: &dyn Array) -> Result<Vec<String>, ArrowError> {
    let nulls = null_flags(a);
    let n = a.len();
    let mut tokens: Vec<String> = match a.data_type() {
        DataType::Null => vec![String::new(); n],
        DataType::Boolean => a
            .as_boolean()
            .iter()
            .map(|v| v.map_or(String::new(), |b| b.to_string()))
            .collect(),
        t if t.is_integer()
            || matches!(
                t,
                DataType::Decimal32(..)
                    | DataType::Decimal64(..)
                    | DataType::Decimal128(..)
                    | DataType::Decimal256(..)
            ) =>
        {
            let fmt = ArrayFormatter::try_new(a, &FormatOptions::default())?;
            (0..n)
                .map(|i| fmt.value(i).try_to_string())
                .collect::<Result<_, _>>()?
        }
        DataType::Float16 => a
            .as_primitive::<Float16Type>()
            .iter()
            .map(|v| float_token(v.map(|x| x.to_f64())))
            .collect(),
        DataType::Float32 => a
            .as_primitive::<Float32Type>()
            .iter()
            .map(|v| match v {
                Some(x) if x.is_finite() => serde_json::Value::from(x).to_string(),
                _ => "null".into(),
            })
            .collect(),
        DataType::Float64 => a
            .as_primitive::<Float64Type>()
            .iter()
            .map(float_token)
            .collect(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let s = arrow::compute::cast(a, &DataType::Utf8)?;
            s.as_string::<i32>()
                .iter()
                .map(|v| v.map(json_string).unwrap_or_default())
                .collect()
        }
        DataType::Dictionary(_, value_type) => {
            let flat = arrow::compute::cast(a, value_type)?;
            return json_tokens(flat.as_ref());
        }
        DataType::Timestamp(unit, Some(_)) => utc_timestamps(a, *unit)
            .iter()
            .map(|s| json_string(s))
            .collect(),
        DataType::List(_) => {
            let l = a.as_list::<i32>();
            let inner = json_tokens(l.values().as_ref())?;
            l.offsets()
                .windows(2)
                .map(|w| json_array(&inner[w[0] as usize..w[1] as usize]))
                .collect()
        }
        DataType::LargeList(_) => {
            let l = a.as_list::<i64>();
            let inner = json_tokens(l.values().as_ref())?;
            l.offsets()
                .windows(2)
                .map(|w| json_array(&inner[w[0] as usize..w[1] as usize]))
                .collect()
        }
        DataType::FixedSizeList(_, size) => {
            let l = a.as_fixed_size_list();
            let inner = json_tokens(l.values().as_ref())?;
            let size = *size as usize;
            (0..n)
                .map(|i| {
                    let start = l.value_offset_at(i);
                    json_array(&inner[start..start + size])
                })
                .collect()
        }
        DataType::Struct(fields) => {
            let s = a.as_struct();
            let keys: Vec<String> = fields.iter().map(|f| json_string(f.name())).collect();
            let cols: Vec<Vec<String>> = s
                .columns()
                .iter()
                .map(|c| json_tokens(c.as_ref()))
                .collect::<Result<_, _>>()?;
            (0..n)
                .map(|i| json_object(keys.iter().zip(cols.iter().map(|c| &c[i]))))
                .collect()
        }
        DataType::Map(..) => {
            let m = a.as_map();
            let keys: Vec<String> = text_values(m.keys().as_ref())?
                .into_iter()
                .map(|k| json_string(&k.unwrap_or_default()))
                .collect();
            let values = json_tokens(m.values().as_ref())?;
            m.value_offsets()
                .windows(2)
                .map(|w| {
                    let r = w[0] as usize..w[1] as usize;
                    json_object(keys[r.clone()].iter().zip(&values[r]))
                })
                .collect()
        }
        DataType::Union(fields, _) => {
            let u = a.as_union();
            let mut children = std::collections::HashMap::new();
            for (id, _) in fields.iter() {
                children.insert(id, json_tokens(u.child(id).as_ref())?);
            }
            (0..n)
                .map(|i| children[&u.type_id(i)][u.value_offset(i)].clone())
                .collect()
        }
        _ => {
            let fmt = ArrayFormatter::try_new(a, &FormatOptions::default())?;
            (0..n)
                .map(|i| {
                    if nulls[i] {
                        Ok(String::new())
                    } else {
                        fmt.value(i).try_to_string().map(|s| json_string(&s))
                    }
                })
                .collect::<Result<_, _>>()?
        }
    };
    for (t, null) in tokens.iter_mut().zip(nulls) {
        if null || t.is_empty() {
            *t = "null".into();
        }
    }
    Ok(tokens)
}

/// Rows one thread formats at a time in a JSON render.
const JSON_BLOCK_ROWS: usize = 1 << 16;

/// One column of a JSON render: numbers written straight from their arrays (the same text as
/// [`float_token`] and the integer formatter), any other type through [`json_tokens`].
enum JsonColumn<'a> {
    F64(&'a arrow::array::Float64Array),
    I64(&'a arrow::array::Int64Array),
    Tokens(Vec<String>),
}

impl<'a> JsonColumn<'a> {
    fn new(a: &'a dyn Array) -> Result<JsonColumn<'a>, ArrowError> {
        Ok(match a.data_type() {
            DataType::Float64 => JsonColumn::F64(a.as_primitive::<Float64Type>()),
            DataType::Int64 => JsonColumn::I64(a.as_primitive::<arrow::datatypes::Int64Type>()),
            _ => JsonColumn::Tokens(json_tokens(a)?),
        })
    }

    fn write(&self, row: usize, buf: &mut Vec<u8>) {
        match self {
            JsonColumn::F64(a) => {
                let x = a.value(row);
                if a.is_null(row) || !x.is_finite() {
                    buf.extend_from_slice(b"null");
                } else {
                    // serde_json writes a finite f64 exactly as `Value::from(x).to_string()`.
                    let _ = serde_json::to_writer(&mut *buf, &x);
                }
            }
            JsonColumn::I64(a) => {
                if a.is_null(row) {
                    buf.extend_from_slice(b"null");
                } else {
                    let _ = serde_json::to_writer(&mut *buf, &a.value(row));
                }
            }
            JsonColumn::Tokens(t) => buf.extend_from_slice(t[row].as_bytes()),
        }
    }
}

fn float_token(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => serde_json::Value::from(x).to_string(),
        _ => "null".into(),
    }
}

fn json_array(items: &[String]) -> String {
    format!("[{}]", items.join(","))
}

fn json_object<'a>(pairs: impl Iterator<Item = (&'a String, &'a String)>) -> String {
    let body: Vec<String> = pairs.map(|(k, v)| format!("{k}:{v}")).collect();
    format!("{{{}}}", body.join(","))
}

/// `value [lo, hi]` with [`human_float`] numbers, or `value` without an interval.
pub(crate) fn interval_text(v: f64, ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((lo, hi)) => format!(
            "{} [{}, {}]",
            human_float(v),
            human_float(lo),
            human_float(hi)
        ),
        None => human_float(v),
    }
}

/// A difference with its interval: [`interval_text`] with an explicit `+` on positive values, so
/// the direction reads at a glance (`-0.0011 [-0.002, -4.1e-4]`, `+0.013 [-9.1e-4, +0.039]`).
pub fn signed_interval_text(v: f64, ci: Option<(f64, f64)>) -> String {
    let signed = |x: f64| {
        let t = human_float(x);
        if x > 0.0 {
            format!("+{t}")
        } else {
            t
        }
    };
    match ci {
        Some((lo, hi)) => format!("{} [{}, {}]", signed(v), signed(lo), signed(hi)),
        None => signed(v),
    }
}

/// A duration for people: `45 s`, `12.5 min`, `3.4 h`, `2.1 d`.
pub fn duration_text(s: f64) -> String {
    if !s.is_finite() {
        return "-".into();
    }
    let a = s.abs();
    let one = |v: f64, unit: &str| {
        let t = format!("{v:.1}");
        format!("{} {unit}", t.strip_suffix(".0").unwrap_or(&t))
    };
    if a < 1.0 {
        format!("{} s", human_float(s))
    } else if a < 120.0 {
        format!("{:.0} s", s)
    } else if a < 3600.0 {
        one(s / 60.0, "min")
    } else if a < 172_800.0 {
        one(s / 3600.0, "h")
    } else {
        one(s / 86_400.0, "d")
    }
}

/// A link bandwidth in bytes/s as people quote it, in bits per second (`100 Mb/s`,
/// `10 Gb/s`).
pub(crate) fn rate_text(bytes_s: f64) -> String {
    let bits = bytes_s * 8.0;
    if bits >= 1e9 {
        format!("{} Gb/s", human_float(bits / 1e9))
    } else {
        format!("{} Mb/s", human_float(bits / 1e6))
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
    /// Lists of floats (JSON arrays in JSON output).
    F64List(Vec<Vec<f64>>),
}

/// Builds one record batch from named columns of equal length.
pub fn batch(cols: Vec<(&str, Col)>) -> Result<RecordBatch, RenderError> {
    use arrow::array::{BooleanArray, Float64Array, Int64Array, ListArray};
    let mut fields = Vec::with_capacity(cols.len());
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(cols.len());
    for (name, col) in cols {
        let arr: ArrayRef = match col {
            Col::F64(v) => Arc::new(Float64Array::from(
                v.into_iter()
                    .map(|x| x.filter(|f| f.is_finite()))
                    .collect::<Vec<_>>(),
            )),
            Col::I64(v) => Arc::new(Int64Array::from(v)),
            Col::Str(v) => Arc::new(StringArray::from(v)),
            Col::Bool(v) => Arc::new(BooleanArray::from(v)),
            Col::F64List(v) => Arc::new(ListArray::from_iter_primitive::<Float64Type, _, _>(
                v.into_iter()
                    .map(|l| Some(l.into_iter().map(Some).collect::<Vec<_>>())),
            )),
        };
        fields.push(Field::new(name, arr.data_type().clone(), true));
        arrays.push(arr);
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?)
}

/// A time on a source's clock as people read it: ISO-8601 UTC on a UTC clock, seconds on a
/// relative one.
pub(crate) fn clock_time(t: f64, time_base: &str) -> String {
    if time_base == "utc" {
        if let Some(d) = chrono::DateTime::from_timestamp(t.floor() as i64, 0) {
            return d.format("%Y-%m-%dT%H:%M:%SZ").to_string();
        }
    }
    format!("{t:.0} s")
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

    fn shown(b: &RecordBatch, format: OutputFormat) -> String {
        let mut out = Vec::new();
        render(std::slice::from_ref(b), format, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn json_and_csv_keep_full_precision() {
        let b = batch(vec![("x", Col::F64(vec![Some(0.123_456_789), None]))]).unwrap();
        assert_eq!(
            shown(&b, OutputFormat::Json).trim(),
            r#"[{"x":0.123456789},{"x":null}]"#
        );
        assert!(shown(&b, OutputFormat::Table).contains("0.1235"));
        // A null alone on its line is quoted, so that the row is not an empty line.
        assert_eq!(shown(&b, OutputFormat::Csv), "x\n0.123456789\n\"\"\n");
    }

    #[test]
    fn timestamps_with_a_zone_are_utc_instants_and_lists_are_arrays() {
        use arrow::array::TimestampMicrosecondArray;
        let ts: ArrayRef = Arc::new(
            TimestampMicrosecondArray::from(vec![Some(1_553_040_000_000_000), None])
                .with_timezone("UTC"),
        );
        let l = batch(vec![("l", Col::F64List(vec![vec![1.5, 2.0], vec![]]))]).unwrap();
        let b = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("t", ts.data_type().clone(), true),
                Field::new("l", l.column(0).data_type().clone(), true),
            ])),
            vec![ts, l.column(0).clone()],
        )
        .unwrap();
        assert_eq!(
            shown(&b, OutputFormat::Json).trim(),
            r#"[{"t":"2019-03-20T00:00:00Z","l":[1.5,2.0]},{"t":null,"l":[]}]"#
        );
        assert_eq!(
            shown(&b, OutputFormat::Csv),
            "t,l\n2019-03-20T00:00:00Z,\"[1.5,2.0]\"\n,[]\n"
        );
        assert!(shown(&b, OutputFormat::Table).contains("2019-03-20T00:00:00Z"));
    }

    #[test]
    fn empty_results() {
        assert_eq!(
            {
                let mut out = Vec::new();
                render(&[], OutputFormat::Json, &mut out).unwrap();
                String::from_utf8(out).unwrap()
            },
            "[]\n"
        );
    }
}
