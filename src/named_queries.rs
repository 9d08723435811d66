//! The named SQL analyses of `queries/` that users run (`hazardserve query NAME`), compiled
//! into the binary: each file opens with a header that documents it, and its parameters are
//! bound by DuckDB, never spliced into the text.
//!
//! The header is a run of `--` lines before the SQL:
//!
//! ```sql
//! -- Purpose: what it answers (continued on lines that start with `--   `)
//! -- Param source: the availability source            (required)
//! -- Param k = 1: at least this many nodes up          (with a default)
//! -- Columns: zone, nodes, k, available_share
//! ```
//!
//! In the SQL a parameter is written `$name`; [`NamedQuery::bind`] turns each into its
//! position (`$1`, `$2`, ...) in the declared order and returns the values to bind. Values are
//! text; a query casts where it needs a number (`$k::INTEGER`).

/// A named query: its name (the file name without `.sql`) and its text with the header.
#[derive(Debug, Clone, Copy)]
pub struct NamedQuery {
    /// Name.
    pub name: &'static str,
    /// The SQL text, header included.
    pub sql: &'static str,
}

/// A declared parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// Name (`$name` in the SQL, `--param name=VALUE` on the command line).
    pub name: String,
    /// Default value (`None`: required).
    pub default: Option<String>,
    /// What it is.
    pub about: String,
}

/// The documentation header of a query.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueryDoc {
    /// What the query answers.
    pub purpose: String,
    /// Its parameters, in binding order.
    pub params: Vec<Param>,
    /// Its output columns.
    pub columns: Vec<String>,
}

/// Why a query could not be bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    /// A required parameter was not given.
    #[error("query {query} needs --param {name}=VALUE ({about})")]
    Missing {
        /// The query.
        query: String,
        /// The parameter.
        name: String,
        /// What it is.
        about: String,
    },
    /// A parameter the query does not declare.
    #[error("query {query} has no parameter {name:?} (its parameters: {known})")]
    Unknown {
        /// The query.
        query: String,
        /// The given name.
        name: String,
        /// The declared names.
        known: String,
    },
    /// A `--param` without `=`.
    #[error("--param {0:?}: write KEY=VALUE")]
    Malformed(String),
}

macro_rules! named {
    ($($name:literal),* $(,)?) => {
        /// Every named query, in `query --list` order: the listings behind `sources`, `nodes`,
        /// `sessions` and `rejects`, then the analyses.
        pub const QUERIES: &[NamedQuery] = &[$(NamedQuery {
            name: $name,
            sql: include_str!(concat!("../queries/", $name, ".sql")),
        }),*];
    };
}

named!(
    "sources",
    "nodes",
    "sessions",
    "rejects",
    "session_quantiles",
    "availability",
    "availability_by_hour",
    "churn",
    "censoring",
    "end_causes",
    "duplicate_inputs",
    "run_policies",
    "slowest_requests",
    "planned_migrations",
    "sweep_pays",
);

/// Looks a named query up.
pub fn get(name: &str) -> Option<&'static NamedQuery> {
    QUERIES.iter().find(|q| q.name == name)
}

/// Parses `KEY=VALUE` arguments.
pub(crate) fn parse_params(args: &[String]) -> Result<Vec<(String, String)>, BindError> {
    args.iter()
        .map(|a| {
            a.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.to_string()))
                .ok_or_else(|| BindError::Malformed(a.clone()))
        })
        .collect()
}

/// The header of a query text.
pub(crate) fn doc_of(sql: &str) -> QueryDoc {
    let mut doc = QueryDoc::default();
    let mut in_purpose = false;
    for line in sql.lines() {
        let Some(rest) = line.strip_prefix("--") else {
            break;
        };
        let rest = rest.trim_start();
        if let Some(p) = rest.strip_prefix("Purpose:") {
            doc.purpose = p.trim().to_string();
            in_purpose = true;
        } else if let Some(p) = rest.strip_prefix("Param ") {
            in_purpose = false;
            let (head, about) = p.split_once(':').unwrap_or((p, ""));
            let (name, default) = match head.split_once('=') {
                Some((n, d)) => (n.trim(), Some(unquote(d.trim()))),
                None => (head.trim(), None),
            };
            doc.params.push(Param {
                name: name.to_string(),
                default,
                about: about.trim().to_string(),
            });
        } else if let Some(c) = rest.strip_prefix("Columns:") {
            in_purpose = false;
            doc.columns = c.split(',').map(|x| x.trim().to_string()).collect();
        } else if in_purpose && line.starts_with("--   ") {
            doc.purpose.push(' ');
            doc.purpose.push_str(rest.trim());
        }
    }
    doc
}

/// `''` is the empty string in a header default.
fn unquote(s: &str) -> String {
    s.strip_prefix('\'')
        .and_then(|x| x.strip_suffix('\''))
        .unwrap_or(s)
        .to_string()
}

impl NamedQuery {
    /// The header.
    pub fn doc(&self) -> QueryDoc {
        doc_of(self.sql)
    }

    /// The SQL with positional parameters and the values to bind, from `given` (name, value)
    /// pairs and the declared defaults.
    pub fn bind(&self, given: &[(String, String)]) -> Result<(String, Vec<String>), BindError> {
        bind_sql(self.name, self.sql, &self.doc().params, given)
    }
}

/// Binds `given` to the declared `params` of `sql` (see [`NamedQuery::bind`]).
pub(crate) fn bind_sql(
    query: &str,
    sql: &str,
    params: &[Param],
    given: &[(String, String)],
) -> Result<(String, Vec<String>), BindError> {
    for (k, _) in given {
        if !params.iter().any(|p| p.name == *k) {
            return Err(BindError::Unknown {
                query: query.to_string(),
                name: k.clone(),
                known: if params.is_empty() {
                    "none".to_string()
                } else {
                    params
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            });
        }
    }
    let mut values = Vec::with_capacity(params.len());
    for p in params {
        let v = given
            .iter()
            .rev()
            .find(|(k, _)| *k == p.name)
            .map(|(_, v)| v.clone())
            .or_else(|| p.default.clone())
            .ok_or_else(|| BindError::Missing {
                query: query.to_string(),
                name: p.name.clone(),
                about: p.about.clone(),
            })?;
        values.push(v);
    }
    Ok((positional(sql, params), values))
}

/// `$name` of a declared parameter becomes `$i` (1-based, declared order); anything else is
/// left alone, and nothing inside `'strings'`, `"identifiers"`, `$tag$ dollar-quoted $tag$`
/// strings, `-- line` and `/* block */` comments is read as a parameter.
fn positional(sql: &str, params: &[Param]) -> String {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    // Copies `sql[i..end]` unchanged and moves on.
    let copy = |out: &mut String, from: usize, to: usize| out.push_str(&sql[from..to]);
    let ident_len = |at: usize| {
        sql[at..]
            .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
            .unwrap_or(sql.len() - at)
    };
    while i < b.len() {
        let rest = &sql[i..];
        let skip_to = |close: &str, from: usize| {
            sql[from..]
                .find(close)
                .map_or(sql.len(), |k| from + k + close.len())
        };
        let end = if rest.starts_with('\'') {
            Some(skip_to("'", i + 1))
        } else if rest.starts_with('"') {
            Some(skip_to("\"", i + 1))
        } else if rest.starts_with("--") {
            Some(skip_to("\n", i + 2))
        } else if rest.starts_with("/*") {
            Some(skip_to("*/", i + 2))
        } else if rest.starts_with('$') {
            let len = ident_len(i + 1);
            let tag_end = i + 1 + len;
            if sql[tag_end..].starts_with('$') {
                // A dollar-quoted string: $$...$$ or $tag$...$tag$.
                let tag = &sql[i..=tag_end];
                Some(skip_to(tag, tag_end + 1))
            } else if let Some(k) = params
                .iter()
                .position(|p| len > 0 && p.name == sql[i + 1..tag_end])
            {
                out.push_str(&format!("${}", k + 1));
                i = tag_end;
                continue;
            } else {
                None
            }
        } else {
            None
        };
        match end {
            Some(e) => {
                copy(&mut out, i, e);
                i = e;
            }
            None => {
                let ch = rest.chars().next().map_or(1, char::len_utf8);
                copy(&mut out, i, i + ch);
                i += ch;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_documents_itself_and_uses_what_it_declares() {
        assert!(QUERIES.len() >= 14);
        for q in QUERIES {
            let d = q.doc();
            assert!(!d.purpose.is_empty(), "{}: no purpose", q.name);
            assert!(!d.columns.is_empty(), "{}: no columns", q.name);
            let (sql, _) = q
                .bind(
                    &d.params
                        .iter()
                        .map(|p| (p.name.clone(), "x".to_string()))
                        .collect::<Vec<_>>(),
                )
                .unwrap();
            for p in &d.params {
                assert!(
                    q.sql.contains(&format!("${}", p.name)),
                    "{}: ${} declared but not used",
                    q.name,
                    p.name
                );
                assert!(!sql.contains(&format!("${}", p.name)), "{}", q.name);
            }
        }
    }

    #[test]
    fn binds_by_name_with_defaults_and_refuses_the_unknown() {
        let q = get("availability").unwrap();
        let (sql, v) = q.bind(&[("source".into(), "gce".into())]).unwrap();
        assert_eq!(v, ["gce", "1"]);
        assert!(
            sql.contains("s.source = $1") && sql.contains("$2::INTEGER"),
            "{sql}"
        );
        let e = q.bind(&[]).unwrap_err().to_string();
        assert!(e.contains("--param source=VALUE"), "{e}");
        let e = q
            .bind(&[("source".into(), "a".into()), ("zone".into(), "b".into())])
            .unwrap_err()
            .to_string();
        assert!(e.contains("source, k"), "{e}");
        assert_eq!(
            parse_params(&["a=b=c".into()]).unwrap(),
            [("a".to_string(), "b=c".to_string())]
        );
        assert!(parse_params(&["ab".into()]).is_err());
        // `$x` inside a string literal is text, not a parameter.
        let p = [Param {
            name: "x".into(),
            default: None,
            about: String::new(),
        }];
        assert_eq!(positional("SELECT '$x', $x", &p), "SELECT '$x', $1");
        assert_eq!(
            positional("-- it's $x\nSELECT $x -- $x\n", &p),
            "-- it's $x\nSELECT $1 -- $x\n"
        );
        assert_eq!(
            positional(
                "SELECT \"it's\", $$ $x ' $$, /* ' $x */ $x, $x$ a $x$, $xy",
                &p
            ),
            "SELECT \"it's\", $$ $x ' $$, /* ' $x */ $1, $x$ a $x$, $xy"
        );
    }
}
