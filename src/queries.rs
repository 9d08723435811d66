//! The named SQL queries of `queries/`, compiled into the binary and run by DuckDB.

/// A named query.
#[derive(Debug, Clone, Copy)]
pub struct NamedQuery {
    /// Name (the file name without `.sql`).
    pub name: &'static str,
    /// Number of `?` parameters it takes.
    pub params: usize,
    /// The SQL text.
    pub sql: &'static str,
}

/// Every named query.
pub const QUERIES: &[NamedQuery] = &[
    NamedQuery {
        name: "sources",
        params: 0,
        sql: include_str!("../queries/sources.sql"),
    },
    NamedQuery {
        name: "nodes",
        params: 1,
        sql: include_str!("../queries/nodes.sql"),
    },
    NamedQuery {
        name: "sessions",
        params: 1,
        sql: include_str!("../queries/sessions.sql"),
    },
    NamedQuery {
        name: "rejects",
        params: 1,
        sql: include_str!("../queries/rejects.sql"),
    },
];

/// Looks a named query up.
pub fn get(name: &str) -> Option<&'static NamedQuery> {
    QUERIES.iter().find(|q| q.name == name)
}
