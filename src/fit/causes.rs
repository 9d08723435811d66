//! How sessions end, per group of a source: the store's `end_cause` of each session mapped to
//! the causes of a competing-risk fit ([`crate::survival::competing`]), with user-given
//! groupings such as `failure:*`.
//!
//! A session that did not end by an event (`event = false`: observation stopped, the user
//! stopped it) is censored whatever its `end_cause` says; censoring is "not observed", never a
//! cause.

use crate::survival::competing::{aalen_johansen, CompetingRisks};
use crate::survival::SurvivalError;

use super::SourceSessions;

/// A rule merging end causes: every cause matching `pattern` (a literal, or a prefix ending in
/// `*`) is reported as `name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CauseGroup {
    /// The pattern: `failure:*` matches every cause starting `failure:`.
    pub pattern: String,
    /// The merged cause's name.
    pub name: String,
}

impl std::str::FromStr for CauseGroup {
    type Err = String;

    /// `PATTERN` or `PATTERN=NAME` (the name defaults to the pattern).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (pattern, name) = match s.split_once('=') {
            Some((p, n)) => (p.trim(), n.trim()),
            None => (s.trim(), s.trim()),
        };
        if pattern.is_empty() || name.is_empty() {
            return Err(format!(
                "{s:?}: expected PATTERN or PATTERN=NAME, e.g. 'failure:*=failure'"
            ));
        }
        if pattern[..pattern.len() - 1].contains('*') {
            return Err(format!(
                "{s:?}: only a trailing * is a wildcard (e.g. 'failure:*')"
            ));
        }
        Ok(CauseGroup {
            pattern: pattern.to_string(),
            name: name.to_string(),
        })
    }
}

impl CauseGroup {
    /// True when `cause` matches the pattern (equal to it, or starting with its prefix before
    /// a trailing `*`).
    pub fn matches(&self, cause: &str) -> bool {
        match self.pattern.strip_suffix('*') {
            Some(prefix) => cause.starts_with(prefix),
            None => cause == self.pattern,
        }
    }
}

/// The name a session's end cause is reported under: the first matching group's name, else
/// the cause itself (`unknown` when the store has none).
fn cause_name<'a>(cause: &'a str, groups: &'a [CauseGroup]) -> &'a str {
    match groups.iter().find(|g| g.matches(cause)) {
        Some(g) => &g.name,
        None if cause.is_empty() => "unknown",
        None => cause,
    }
}

/// A group's competing-risk fit with the cause names (`fit.causes[k].cause = c` is
/// `labels[c - 1]`).
#[derive(Debug, Clone)]
pub struct GroupCauses {
    /// The group.
    pub group: String,
    /// Cause names, in order of first appearance.
    pub labels: Vec<String>,
    /// The fit (entry ages honoured).
    pub fit: CompetingRisks,
}

impl GroupCauses {
    /// The name of cause code `c`.
    pub fn label(&self, c: u32) -> &str {
        self.labels
            .get(c as usize - 1)
            .map(String::as_str)
            .unwrap_or("?")
    }
}

/// The competing-risk fit of one group of `data` (its sessions as [`super::group_columns`]
/// takes them: entry ages honoured, instantaneous sessions left out).
pub(crate) fn group_causes(
    data: &SourceSessions,
    group: &str,
    groups: &[CauseGroup],
) -> Result<GroupCauses, SurvivalError> {
    let rows = data.group_rows(group);
    let mut labels: Vec<String> = Vec::new();
    let (mut exit, mut entry, mut codes) = (Vec::new(), Vec::new(), Vec::new());
    for &i in &rows {
        let s = &data.sessions[i];
        exit.push(s.entry + (s.end - s.start));
        entry.push(s.entry);
        let code = if s.event {
            let name = cause_name(data.causes.get(i).map_or("", String::as_str), groups);
            match labels.iter().position(|l| l == name) {
                Some(k) => k as u32 + 1,
                None => {
                    labels.push(name.to_string());
                    labels.len() as u32
                }
            }
        } else {
            0
        };
        codes.push(code);
    }
    let truncated = entry.iter().any(|&e| e > 0.0);
    let fit = aalen_johansen(&exit, &codes, truncated.then_some(&entry[..]))?;
    Ok(GroupCauses {
        group: group.to_string(),
        labels,
        fit,
    })
}
