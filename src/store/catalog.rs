//! The DuckDB side of the store: views over the committed Parquet files.
//!
//! Commands query through an in-memory DuckDB whose views name exactly the committed files, so
//! a reader never sees a half-written source and never contends for the catalog file.
//! `catalog.duckdb` holds the same views for people who open the store with DuckDB themselves;
//! it is rebuilt (atomically: written aside, then renamed) after every commit and by
//! `hazardserve store rebuild`.

use arrow::datatypes::{DataType, TimeUnit};
use arrow::record_batch::RecordBatch;
use duckdb::Connection;

use super::tables::TABLES;
use super::{Result, Store};

/// A DuckDB connection with the store's views.
pub struct Catalog {
    conn: Connection,
}

fn sql_type(t: &DataType) -> &'static str {
    match t {
        DataType::Utf8 | DataType::LargeUtf8 => "VARCHAR",
        DataType::Boolean => "BOOLEAN",
        DataType::Int8 => "TINYINT",
        DataType::Int16 => "SMALLINT",
        DataType::Int32 => "INTEGER",
        DataType::Int64 => "BIGINT",
        DataType::UInt8 => "UTINYINT",
        DataType::UInt32 => "UINTEGER",
        DataType::UInt64 => "UBIGINT",
        DataType::Float32 => "FLOAT",
        DataType::Float64 => "DOUBLE",
        DataType::Timestamp(TimeUnit::Microsecond, Some(_)) => "TIMESTAMPTZ",
        DataType::Timestamp(_, _) => "TIMESTAMP",
        _ => "VARCHAR",
    }
}

fn sql_str(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The `CREATE VIEW` statements for the committed files of `store`.
fn view_statements(store: &Store) -> Result<Vec<String>> {
    let manifests = store.manifests()?;
    let root = std::fs::canonicalize(store.root()).unwrap_or_else(|_| store.root().to_path_buf());
    let mut out = Vec::new();
    for t in TABLES {
        let files: Vec<String> = manifests
            .iter()
            .filter_map(|m| m.file(t.name))
            .map(|f| sql_str(&root.join(&f.path).to_string_lossy()))
            .collect();
        let schema = (t.schema)();
        let body = if files.is_empty() {
            let cols: Vec<String> = std::iter::once("NULL::VARCHAR AS source".to_string())
                .chain(
                    schema
                        .fields()
                        .iter()
                        .map(|f| format!("NULL::{} AS \"{}\"", sql_type(f.data_type()), f.name())),
                )
                .collect();
            format!("SELECT {} WHERE false", cols.join(", "))
        } else {
            let cols: Vec<String> = std::iter::once("source".to_string())
                .chain(schema.fields().iter().map(|f| format!("\"{}\"", f.name())))
                .collect();
            format!(
                "SELECT {} FROM read_parquet([{}], hive_partitioning = true, hive_types = {{'source': VARCHAR}}, union_by_name = true)",
                cols.join(", "),
                files.join(", ")
            )
        };
        out.push(format!("CREATE OR REPLACE VIEW {} AS {}", t.name, body));
    }
    Ok(out)
}

impl Catalog {
    /// An in-memory connection with views over the committed files of `store`.
    pub fn in_memory(store: &Store) -> Result<Catalog> {
        let conn = Connection::open_in_memory()?;
        for stmt in view_statements(store)? {
            conn.execute_batch(&stmt)?;
        }
        Ok(Catalog { conn })
    }

    /// Recreates `catalog.duckdb` from the manifests: written to a temporary file, then renamed.
    pub fn rebuild_file(store: &Store) -> Result<()> {
        let statements = view_statements(store)?;
        super::replace_file(&store.catalog_path(), |tmp| {
            let conn = Connection::open(tmp)?;
            conn.execute_batch("BEGIN TRANSACTION")?;
            for stmt in &statements {
                conn.execute_batch(stmt)?;
            }
            conn.execute_batch("COMMIT; CHECKPOINT;")?;
            Ok(())
        })
    }

    /// Runs `sql` with positional string parameters and collects the Arrow result.
    pub fn query_arrow(&self, sql: &str, params: &[&str]) -> Result<Vec<RecordBatch>> {
        let mut stmt = self.conn.prepare(sql)?;
        let p: Vec<&dyn duckdb::ToSql> = params.iter().map(|s| s as &dyn duckdb::ToSql).collect();
        let batches: Vec<RecordBatch> = stmt.query_arrow(p.as_slice())?.collect();
        Ok(batches)
    }

    /// The underlying connection, for callers that need rows rather than batches.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}
