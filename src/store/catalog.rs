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

use super::dir::Store;
use super::error::Result;
use super::files::{fault_point, replace_file};
use super::tables::{added_in, TABLES};

/// A DuckDB connection with the store's views.
pub struct Catalog {
    conn: Connection,
    /// The committed files the views read.
    files: Vec<String>,
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
        DataType::List(item) if item.data_type() == &DataType::Int64 => "BIGINT[]",
        _ => "VARCHAR",
    }
}

fn sql_str(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Notes once per process each workload source stored before its requests' prefix columns
/// existed: its rows read them as NULL.
fn note_without_prefix(sources: &[String]) {
    use std::sync::{Mutex, OnceLock};
    static NOTED: OnceLock<Mutex<std::collections::HashSet<String>>> = OnceLock::new();
    let noted = NOTED.get_or_init(Default::default);
    let Ok(mut noted) = noted.lock() else {
        return;
    };
    for source in sources {
        if noted.insert(source.clone()) {
            crate::diag::say(format!(
                "note: workload source {source} was ingested before prefix blocks and conversations were kept (store schema 1): its requests have neither (NULL in `requests`); ingest it again with --replace to add them"
            ));
        }
    }
}

/// Warns once per process about each source left out of the views.
fn warn_left_out(left_out: &[(String, String)]) {
    use std::sync::{Mutex, OnceLock};
    static WARNED: OnceLock<Mutex<std::collections::HashSet<String>>> = OnceLock::new();
    let warned = WARNED.get_or_init(Default::default);
    let Ok(mut warned) = warned.lock() else {
        return;
    };
    for (source, why) in left_out {
        if warned.insert(source.clone()) {
            crate::diag::warn(format!(
                "warning: source {source} is damaged and left out of every view ({why}); see `hazardserve store verify`, or remove it with `hazardserve store remove --source {source}`"
            ));
        }
    }
}

/// The `CREATE VIEW` statements over the readable sources of `store` (see [`Store::readable`]),
/// and the committed files they read. Each file is read on its own with its source as a
/// constant column (no Hive-path parsing, so a store path that contains `source=` or a source
/// name that Hive readers would misread cannot change what is read).
fn view_statements(store: &Store) -> Result<(Vec<String>, Vec<String>)> {
    let (manifests, left_out) = store.readable()?;
    warn_left_out(&left_out);
    let root = std::fs::canonicalize(store.root()).unwrap_or_else(|_| store.root().to_path_buf());
    let mut out = Vec::new();
    let mut all_files = Vec::new();
    let mut without_prefix = Vec::new();
    for t in TABLES {
        let files: Vec<(String, String, u32)> = manifests
            .iter()
            .filter_map(|m| m.file(t.name).map(|f| (m, f)))
            .map(|(m, f)| {
                let path = root.join(&f.path).to_string_lossy().into_owned();
                (m.source.clone(), path, m.schema_version)
            })
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
            let parts: Vec<String> = files
                    .iter()
                    .map(|(source, file, version)| {
                        // A file written before a column existed reads it as NULL.
                        let absent: String = schema
                            .fields()
                            .iter()
                            .filter(|f| added_in(t.name, f.name()) > *version)
                            .map(|f| {
                                format!(", NULL::{} AS \"{}\"", sql_type(f.data_type()), f.name())
                            })
                            .collect();
                        if t.name == "requests" && !absent.is_empty() {
                            without_prefix.push(source.clone());
                        }
                        format!(
                            "SELECT {} AS source, *{absent} FROM read_parquet({}, hive_partitioning = false)",
                            sql_str(source),
                            sql_str(file)
                        )
                    })
                    .collect();
            format!(
                "SELECT {} FROM ({})",
                cols.join(", "),
                parts.join(" UNION ALL BY NAME ")
            )
        };
        all_files.extend(files.into_iter().map(|(_, f, _)| f));
        out.push(format!("CREATE OR REPLACE VIEW {} AS {}", t.name, body));
    }
    note_without_prefix(&without_prefix);
    Ok((out, all_files))
}

/// Leading keywords of DuckDB statements that write, attach, load or change settings.
const WRITING_KEYWORDS: &[&str] = &[
    "copy",
    "attach",
    "detach",
    "install",
    "load",
    "create",
    "insert",
    "update",
    "delete",
    "drop",
    "alter",
    "set",
    "reset",
    "pragma",
    "export",
    "import",
    "checkpoint",
    "vacuum",
    "call",
    "use",
    "begin",
    "commit",
    "rollback",
    "abort",
    "start",
    "end",
    "merge",
    "truncate",
    "upsert",
    "replace",
    "prepare",
    "execute",
    "deallocate",
    "force",
    "analyze",
    "comment",
];

/// Whether `sql` reads only, by its leading keyword (after comments and opening parentheses):
/// the statements that write, attach, load extensions or change settings ([`WRITING_KEYWORDS`],
/// and `EXPLAIN [ANALYZE]` of one) are refused; `SELECT`, `WITH`, `FROM`, `VALUES`, `TABLE`,
/// `SHOW`, `DESCRIBE`, `SUMMARIZE`, `PIVOT` pass, and so does anything else (a typo), for
/// DuckDB's parser to explain. DuckDB prepares one statement at a time, so a second statement
/// after `;` is refused by DuckDB itself, and [`Catalog::lock_down`] keeps every file but the
/// store's own out of reach whatever the statement.
pub fn is_read_only_statement(sql: &str) -> std::result::Result<(), String> {
    let mut rest = sql;
    loop {
        let trimmed = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '(');
        if let Some(r) = trimmed.strip_prefix("--") {
            rest = r.split_once('\n').map_or("", |(_, after)| after);
        } else if let Some(r) = trimmed.strip_prefix("/*") {
            rest = r.split_once("*/").map_or("", |(_, after)| after);
        } else {
            rest = trimmed;
            break;
        }
    }
    let word: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect::<String>()
        .to_ascii_lowercase();
    match word.as_str() {
        "select" | "with" | "from" | "values" | "table" | "show" | "describe" | "summarize"
        | "pivot" | "unpivot" => Ok(()),
        "explain" => {
            let after = rest[word.len()..].trim_start();
            let after = if after.len() >= 7 && after[..7].eq_ignore_ascii_case("analyze") {
                &after[7..]
            } else {
                after
            };
            is_read_only_statement(after)
        }
        "" => Err("no SQL statement".into()),
        // Not a statement keyword DuckDB knows (a typo, say): DuckDB's own parser error says
        // more than a refusal would, and the locked-down connection still opens no file.
        w if !WRITING_KEYWORDS.contains(&w) => Ok(()),
        _ => Err(format!(
            "`hazardserve sql` only reads: {} statements are refused (the store's files are written only by hazardserve's own commands)",
            word.to_ascii_uppercase()
        )),
    }
}

impl Catalog {
    /// An in-memory connection with views over the committed files of `store`.
    pub fn in_memory(store: &Store) -> Result<Catalog> {
        let conn = Connection::open_in_memory()?;
        let (statements, files) = view_statements(store)?;
        for stmt in statements {
            conn.execute_batch(&stmt)?;
        }
        Ok(Catalog { conn, files })
    }

    /// Locks the connection down for SQL typed by a user: only the store's committed files can
    /// be opened (DuckDB's `enable_external_access = false` with those files as
    /// `allowed_paths`, so `ATTACH`, `INSTALL`, `COPY ... TO` elsewhere and reading other files
    /// are refused), and the configuration is locked so SQL cannot undo it. Pair it with
    /// [`is_read_only_statement`], which refuses writing statements before they run.
    pub fn lock_down(&self) -> Result<()> {
        let list: Vec<String> = self.files.iter().map(|f| sql_str(f)).collect();
        self.conn.execute_batch(&format!(
            "SET allowed_paths = [{}]; SET enable_external_access = false; SET autoinstall_known_extensions = false; SET autoload_known_extensions = false; SET lock_configuration = true;",
            list.join(", ")
        ))?;
        Ok(())
    }

    /// Recreates `catalog.duckdb` from the manifests: written to a temporary file, then renamed.
    pub fn rebuild_file(store: &Store) -> Result<()> {
        let (statements, _) = view_statements(store)?;
        replace_file(&store.catalog_path(), |tmp| {
            let conn = Connection::open(tmp)?;
            conn.execute_batch("BEGIN TRANSACTION")?;
            for stmt in &statements {
                conn.execute_batch(stmt)?;
            }
            conn.execute_batch("COMMIT; CHECKPOINT;")?;
            Ok(())
        })
    }

    /// Runs `sql` with positional string parameters and collects the Arrow result. An empty
    /// result is one batch without rows, so that its schema (the CSV header) is kept.
    pub fn query_arrow(&self, sql: &str, params: &[&str]) -> Result<Vec<RecordBatch>> {
        let mut stmt = self.conn.prepare(sql)?;
        let p: Vec<&dyn duckdb::ToSql> = params.iter().map(|s| s as &dyn duckdb::ToSql).collect();
        let arrow = stmt.query_arrow(p.as_slice())?;
        let schema = arrow.get_schema();
        let batches: Vec<RecordBatch> = arrow.collect();
        if batches.is_empty() {
            return Ok(vec![RecordBatch::new_empty(schema)]);
        }
        Ok(batches)
    }

    /// The underlying connection, for callers that need rows rather than batches.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}

/// Rebuilds `catalog.duckdb`, turning a failure into a warning: the Parquet files and manifests
/// are the truth, the catalog file only a convenience for people who open it with DuckDB.
pub(super) fn rebuild_catalog_or_warn(store: &Store, what: &str) {
    fault_point("rebuild the catalog");
    if let Err(e) = Catalog::rebuild_file(store) {
        crate::diag::warn(format!(
            "warning: {what}, but catalog.duckdb could not be rebuilt ({}); run `hazardserve store rebuild`",
            crate::diag::error_chain(&e)
        ));
    }
}

impl Store {
    /// An in-memory DuckDB connection with one view per table over the committed files.
    pub fn query(&self) -> Result<Catalog> {
        Catalog::in_memory(self)
    }
}
