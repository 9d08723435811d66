//! Source names: which are valid.

use super::error::{Result, StoreError};

/// Checks a source name: it becomes a directory name (`source=<name>`, read back by Hive-style
/// readers) and a SQL string. Reserved: names containing `.tmp-` (the store's temporary files)
/// and Hive's `__HIVE_DEFAULT_PARTITION__` (read back as NULL), in any case.
pub fn validate_source_name(name: &str) -> Result<()> {
    let lower = name.to_ascii_lowercase();
    if lower.contains(".tmp-") {
        return Err(StoreError::ReservedSourceName(
            name.to_string(),
            "names containing \".tmp-\" are reserved for the store's temporary files",
        ));
    }
    if lower.contains("__hive_default_partition__") {
        return Err(StoreError::ReservedSourceName(
            name.to_string(),
            "Hive-style readers (DuckDB, polars, pyarrow) read __HIVE_DEFAULT_PARTITION__ back as NULL",
        ));
    }
    let ok = !name.is_empty()
        && name.len() <= 100
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(StoreError::BadSourceName(name.to_string()))
    }
}
