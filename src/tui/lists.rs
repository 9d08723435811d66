//! The lists the screens move through: what each shows after its filter and sort, and the
//! selection in each, kept by key (source name, node id, policy name, request key, cell key) so
//! that sorting and filtering never select another item by accident.

use super::app::{App, List, Load, Sort};
use super::data::{
    NodeData, PolicyRow, ReplayData, RequestKey, RequestList, RequestRow, SourceData, SourceRow,
    SweepData, POOLED,
};

impl App {
    /// The map rows shown: those whose row label contains the filter (case-insensitive).
    pub fn visible_map_rows(&self, d: &SweepData) -> Vec<usize> {
        let f = self.filter(List::Cells).to_lowercase();
        (0..d.rows.len())
            .filter(|&r| f.is_empty() || d.rows[r].iter().any(|v| v.to_lowercase().contains(&f)))
            .collect()
    }

    /// Filter text of a list.
    pub fn filter(&self, list: List) -> &str {
        self.filters.get(&list).map_or("", String::as_str)
    }

    /// Sort of a list.
    pub fn sort(&self, list: List) -> Sort {
        self.sorts.get(&list).copied().unwrap_or_default()
    }

    /// The sources shown: filtered and sorted.
    pub fn visible_sources(&self) -> Vec<&SourceRow> {
        let Some(o) = self.overview() else {
            return Vec::new();
        };
        let f = self.filter(List::Sources).to_lowercase();
        let mut v: Vec<&SourceRow> = o
            .sources
            .iter()
            .filter(|r| {
                f.is_empty()
                    || r.source.to_lowercase().contains(&f)
                    || r.kind.to_lowercase().contains(&f)
                    || r.adapter.to_lowercase().contains(&f)
            })
            .collect();
        let s = self.sort(List::Sources);
        v.sort_by(|a, b| {
            let o = match s.column {
                1 => a.nodes.cmp(&b.nodes),
                2 => a.sessions.cmp(&b.sessions),
                3 => a.censored_share().total_cmp(&b.censored_share()),
                4 => a.span_s().total_cmp(&b.span_s()),
                _ => std::cmp::Ordering::Equal,
            }
            .then_with(|| a.source.cmp(&b.source));
            if s.descending {
                o.reverse()
            } else {
                o
            }
        });
        v
    }

    /// The nodes of `d` shown: filtered and sorted.
    pub fn visible_nodes<'a>(&self, d: &'a SourceData) -> Vec<&'a NodeData> {
        let f = self.filter(List::Nodes).to_lowercase();
        let mut v: Vec<&NodeData> = d
            .nodes
            .iter()
            .filter(|n| f.is_empty() || n.id.to_lowercase().contains(&f))
            .collect();
        let s = self.sort(List::Nodes);
        v.sort_by(|a, b| {
            let o = match s.column {
                1 => a.sessions.cmp(&b.sessions),
                2 => cmp_opt(a.median_s, b.median_s),
                3 => cmp_opt(a.current_age_s, b.current_age_s),
                4 => cmp_opt(a.weight, b.weight),
                _ => std::cmp::Ordering::Equal,
            }
            .then_with(|| a.id.cmp(&b.id));
            if s.descending {
                o.reverse()
            } else {
                o
            }
        });
        v
    }

    /// The policies of `r` shown: filtered and sorted.
    pub fn visible_policies<'a>(&self, r: &'a ReplayData) -> Vec<&'a PolicyRow> {
        let f = self.filter(List::Policies).to_lowercase();
        let mut v: Vec<(usize, &PolicyRow)> = r
            .rows
            .iter()
            .enumerate()
            .filter(|(_, p)| f.is_empty() || p.name.to_lowercase().contains(&f))
            .collect();
        let s = self.sort(List::Policies);
        v.sort_by(|(ia, a), (ib, b)| {
            let o = match s.column {
                1 => cmp_opt(a.mean.value, b.mean.value),
                2 => cmp_opt(a.p99.value, b.p99.value),
                3 => cmp_opt(a.interruptions.value, b.interruptions.value),
                4 => cmp_opt(a.gap_closed.value, b.gap_closed.value),
                _ => std::cmp::Ordering::Equal,
            }
            .then_with(|| ia.cmp(ib));
            if s.descending {
                o.reverse()
            } else {
                o
            }
        });
        v.into_iter().map(|(_, p)| p).collect()
    }

    /// The requests of `l` shown: filtered (request index, workload id or node) and sorted.
    pub fn visible_requests<'a>(&self, l: &'a RequestList) -> Vec<&'a RequestRow> {
        let f = self.filter(List::Requests).to_lowercase();
        let mut v: Vec<(usize, &RequestRow)> = l
            .rows
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                f.is_empty()
                    || format!("#{}", r.request).contains(&f)
                    || r.request_id.to_string().contains(&f)
                    || r.first_node
                        .as_deref()
                        .is_some_and(|n| n.to_lowercase().contains(&f))
                    || r.final_node
                        .as_deref()
                        .is_some_and(|n| n.to_lowercase().contains(&f))
            })
            .collect();
        let s = self.sort(List::Requests);
        v.sort_by(|(ia, a), (ib, b)| {
            let o = match s.column {
                1 => cmp_opt(a.completion_s, b.completion_s),
                2 => (a.window, a.seed)
                    .cmp(&(b.window, b.seed))
                    .then(a.arrival_s.total_cmp(&b.arrival_s)),
                3 => a.key().cmp(&b.key()),
                _ => std::cmp::Ordering::Equal,
            }
            .then_with(|| ia.cmp(ib));
            if s.descending {
                o.reverse()
            } else {
                o
            }
        });
        v.into_iter().map(|(_, r)| r).collect()
    }

    /// The trigger destinations shown: the pooled curve, then the filtered nodes.
    pub fn visible_dests(&self, d: &SourceData) -> Vec<String> {
        let f = self.filter(List::Destinations).to_lowercase();
        std::iter::once(POOLED.to_string())
            .chain(
                d.nodes
                    .iter()
                    .filter(|n| f.is_empty() || n.id.to_lowercase().contains(&f))
                    .map(|n| n.id.clone()),
            )
            .collect()
    }

    /// The keys of the list the current screen moves through, in display order, and the
    /// selected key.
    pub(crate) fn list_keys(&self, list: List) -> (Vec<String>, Option<String>) {
        match list {
            List::Sources => (
                self.visible_sources()
                    .iter()
                    .map(|r| r.source.clone())
                    .collect(),
                self.sel_source.clone(),
            ),
            List::Nodes => match self.selected_source_data() {
                Some(d) => (
                    self.visible_nodes(d).iter().map(|n| n.id.clone()).collect(),
                    self.sel_node.clone(),
                ),
                None => (Vec::new(), None),
            },
            List::Policies => match self.replay_data() {
                Some(r) => (
                    self.visible_policies(r)
                        .iter()
                        .map(|p| p.name.clone())
                        .collect(),
                    self.sel_policy.clone(),
                ),
                None => (Vec::new(), None),
            },
            List::Requests => match self.requests() {
                Some(Load::Ready(l)) => (
                    self.visible_requests(l)
                        .iter()
                        .map(|r| key_string(r.key()))
                        .collect(),
                    self.sel_request.map(key_string),
                ),
                _ => (Vec::new(), None),
            },
            List::Destinations => match self.selected_source_data() {
                Some(d) => (self.visible_dests(d), self.sel_dest.clone()),
                None => (Vec::new(), None),
            },
            List::Cells => match self.sweep_data() {
                Some(d) => (
                    self.visible_map_rows(d)
                        .into_iter()
                        .flat_map(|r| d.grid[r].iter().flatten())
                        .map(|&i| d.cells[i].result.key.clone())
                        .collect(),
                    self.sel_cell.clone(),
                ),
                None => (Vec::new(), None),
            },
        }
    }

    pub(crate) fn set_selected(&mut self, list: List, key: String) {
        match list {
            List::Sources => {
                if self.sel_source.as_deref() != Some(key.as_str()) {
                    self.sel_source = Some(key);
                    self.sel_node = None;
                    self.sel_dest = None;
                }
            }
            List::Nodes => self.sel_node = Some(key),
            List::Policies => {
                if self.sel_policy.as_deref() != Some(key.as_str()) {
                    self.sel_policy = Some(key);
                    self.sel_request = None;
                }
            }
            List::Requests => self.sel_request = parse_key(&key),
            List::Destinations => self.sel_dest = Some(key),
            List::Cells => self.sel_cell = Some(key),
        }
    }

    /// Position of the selection in the visible list of `list`.
    pub fn selected_index(&self, list: List) -> Option<usize> {
        let (keys, sel) = self.list_keys(list);
        let sel = sel?;
        keys.iter().position(|k| *k == sel)
    }
}

fn cmp_opt(a: Option<f64>, b: Option<f64>) -> std::cmp::Ordering {
    match (a, b) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Greater,
        (None, Some(_)) => std::cmp::Ordering::Less,
        (None, None) => std::cmp::Ordering::Equal,
    }
}

fn key_string(k: RequestKey) -> String {
    format!("{}/{}/{}", k.window, k.seed, k.request)
}

fn parse_key(s: &str) -> Option<RequestKey> {
    let mut it = s.split('/');
    Some(RequestKey {
        window: it.next()?.parse().ok()?,
        seed: it.next()?.parse().ok()?,
        request: it.next()?.parse().ok()?,
    })
}
