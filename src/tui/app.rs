//! The TUI's state and its messages: the screens, the lists with their filters and sorts, what
//! is loaded, and the read-only views the screens draw from (visible rows, selections).
//!
//! Only [`super::update::update`] changes the state. When a screen needs data the state queues
//! a [`LoadJob`] (see [`App::take_jobs`]); the event loop hands jobs to the loader thread and feeds
//! the results back as [`Msg::Loaded`]. Selections are kept by key (source name, node id,
//! policy name, request key), so sorting and filtering never select another item by accident.

use std::collections::HashMap;
use std::sync::Arc;

use crossterm::event::KeyEvent;

use super::data::{
    LoadJob, Loaded, NodeData, Overview, PolicyRow, ReplayData, RequestExplain, RequestKey,
    RequestList, RequestRow, SourceData, SourceRow, TriggerData, TriggerKey, VerdictView, POOLED,
    TRIGGER_CONTEXTS,
};

/// The six screens, in tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Screen {
    /// Every source of the store.
    Sources,
    /// The nodes of the selected source.
    Nodes,
    /// Survival curves of the selected node.
    Survival,
    /// The policy comparison of a replay run.
    Replay,
    /// The timeline of one request.
    Request,
    /// Risk gain against uptime for a node pair.
    Trigger,
}

impl Screen {
    /// Every screen, in tab order.
    pub const ALL: [Screen; 6] = [
        Screen::Sources,
        Screen::Nodes,
        Screen::Survival,
        Screen::Replay,
        Screen::Request,
        Screen::Trigger,
    ];

    /// Position in [`Screen::ALL`].
    pub fn index(self) -> usize {
        Screen::ALL.iter().position(|&s| s == self).unwrap_or(0)
    }

    /// Tab title.
    pub fn title(self) -> &'static str {
        match self {
            Screen::Sources => "Sources",
            Screen::Nodes => "Nodes",
            Screen::Survival => "Survival",
            Screen::Replay => "Replay",
            Screen::Request => "Request",
            Screen::Trigger => "Trigger",
        }
    }

    /// The screen Enter leads to.
    pub(crate) fn child(self) -> Option<Screen> {
        match self {
            Screen::Sources => Some(Screen::Nodes),
            Screen::Nodes => Some(Screen::Survival),
            Screen::Survival => Some(Screen::Trigger),
            Screen::Replay => Some(Screen::Request),
            Screen::Request | Screen::Trigger => None,
        }
    }

    /// The screen Backspace/Left returns to.
    pub(crate) fn parent(self) -> Option<Screen> {
        match self {
            Screen::Sources => None,
            Screen::Nodes | Screen::Replay => Some(Screen::Sources),
            Screen::Survival => Some(Screen::Nodes),
            Screen::Request => Some(Screen::Replay),
            Screen::Trigger => Some(Screen::Survival),
        }
    }

    /// The list (filter and sort slot) the screen moves through.
    pub fn list(self) -> List {
        match self {
            Screen::Sources => List::Sources,
            Screen::Nodes | Screen::Survival => List::Nodes,
            Screen::Replay => List::Policies,
            Screen::Request => List::Requests,
            Screen::Trigger => List::Destinations,
        }
    }
}

/// The lists that can be filtered and sorted (the survival screen moves through the nodes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum List {
    /// Sources.
    Sources,
    /// Nodes of the selected source.
    Nodes,
    /// Policies of the run.
    Policies,
    /// Requests of the selected policy.
    Requests,
    /// Destination nodes of the trigger screen.
    Destinations,
}

impl List {
    pub(crate) fn slot(self) -> usize {
        match self {
            List::Sources => 0,
            List::Nodes => 1,
            List::Policies => 2,
            List::Requests => 3,
            List::Destinations => 4,
        }
    }

    /// The sort columns of the list (empty: not sortable).
    pub fn sort_columns(self) -> &'static [&'static str] {
        match self {
            List::Sources => &["name", "nodes", "sessions", "censored", "span"],
            List::Nodes => &["node", "sessions", "median", "age", "weight"],
            List::Policies => &["run order", "mean", "p99", "interruptions", "gap closed"],
            List::Requests => &["eventful", "completion", "arrival", "request"],
            List::Destinations => &[],
        }
    }
}

/// Sort column and direction of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sort {
    /// Index into [`List::sort_columns`].
    pub column: usize,
    /// Largest first.
    pub descending: bool,
}

/// The state of one load.
#[derive(Debug, Clone)]
pub enum Load<T> {
    /// Queued or running.
    Loading,
    /// Done.
    Ready(T),
    /// Failed, with the message.
    Failed(String),
}

/// Everything that can happen to the app.
#[derive(Debug)]
pub enum Msg {
    /// A key press.
    Key(KeyEvent),
    /// The spinner's clock (sent while something loads).
    Tick,
    /// The terminal was resized.
    Resize(u16, u16),
    /// A job finished.
    Loaded(LoadJob, Result<Loaded, String>),
    /// A job was dropped by the loader because a newer one replaced it.
    Dropped(LoadJob),
}

/// The app state.
#[derive(Debug)]
pub struct App {
    /// The screen shown.
    pub screen: Screen,
    /// The run to show (`--run`, or switched with `[`/`]`); `None`: the latest.
    pub run: Option<String>,
    /// Every finished or pending load, by job.
    pub loads: HashMap<LoadJob, Load<Loaded>>,
    /// Jobs in flight, in request order (for the spinner).
    pub in_flight: Vec<LoadJob>,
    /// Selected source.
    pub sel_source: Option<String>,
    /// Selected node.
    pub sel_node: Option<String>,
    /// Selected policy (display name).
    pub sel_policy: Option<String>,
    /// Selected request.
    pub sel_request: Option<RequestKey>,
    /// Selected trigger destination ([`POOLED`] or a node id).
    pub sel_dest: Option<String>,
    /// Index into [`TRIGGER_CONTEXTS`].
    pub context_idx: usize,
    /// Filter text per list.
    pub filters: [String; 5],
    /// Sort per list.
    pub sorts: [Sort; 5],
    /// The filter being typed (`/`), if any.
    pub input: Option<String>,
    /// The key help is shown.
    pub help: bool,
    /// The app should exit.
    pub quit: bool,
    /// Spinner clock.
    pub tick: u64,
    /// A one-line notice for the status bar (cleared by the next key).
    pub notice: Option<String>,
    /// Last terminal size seen.
    pub size: (u16, u16),
    outbox: Vec<LoadJob>,
}

impl App {
    /// A fresh app showing the sources; `run` selects the replay run (default: the latest).
    /// Queues the first loads.
    pub fn new(run: Option<String>) -> App {
        let mut app = App {
            screen: Screen::Sources,
            run,
            loads: HashMap::new(),
            in_flight: Vec::new(),
            sel_source: None,
            sel_node: None,
            sel_policy: None,
            sel_request: None,
            sel_dest: None,
            context_idx: 3,
            filters: Default::default(),
            sorts: [
                Sort::default(),
                Sort::default(),
                Sort::default(),
                Sort::default(),
                Sort::default(),
            ],
            input: None,
            help: false,
            quit: false,
            tick: 0,
            notice: None,
            size: (0, 0),
            outbox: Vec::new(),
        };
        app.normalize();
        app
    }

    /// Jobs queued since the last call (the event loop sends them to the loader).
    pub fn take_jobs(&mut self) -> Vec<LoadJob> {
        std::mem::take(&mut self.outbox)
    }

    /// True while any job is in flight.
    pub fn is_loading(&self) -> bool {
        !self.in_flight.is_empty()
    }

    fn request(&mut self, job: LoadJob) {
        if !self.loads.contains_key(&job) {
            self.loads.insert(job.clone(), Load::Loading);
            self.in_flight.push(job.clone());
            self.outbox.push(job);
        }
    }

    fn get(&self, job: &LoadJob) -> Option<&Load<Loaded>> {
        self.loads.get(job)
    }

    /// The overview, once loaded.
    pub fn overview(&self) -> Option<&Overview> {
        match self.get(&LoadJob::Overview) {
            Some(Load::Ready(Loaded::Overview(o))) => Some(o),
            _ => None,
        }
    }

    /// The load state of a job, mapped through `f` when ready.
    pub fn load_of<'a, T>(
        &'a self,
        job: &LoadJob,
        f: impl Fn(&'a Loaded) -> Option<T>,
    ) -> Option<Load<T>> {
        Some(match self.get(job)? {
            Load::Loading => Load::Loading,
            Load::Failed(e) => Load::Failed(e.clone()),
            Load::Ready(l) => match f(l) {
                Some(t) => Load::Ready(t),
                None => Load::Failed("unexpected result".into()),
            },
        })
    }

    /// The loaded data of a source.
    pub fn source_data(&self, source: &str) -> Option<&Arc<SourceData>> {
        match self.get(&LoadJob::Source(source.to_string())) {
            Some(Load::Ready(Loaded::Source(d))) => Some(d),
            _ => None,
        }
    }

    /// The data of the selected source.
    pub fn selected_source_data(&self) -> Option<&Arc<SourceData>> {
        self.sel_source.as_deref().and_then(|s| self.source_data(s))
    }

    /// The selected source's row.
    pub fn selected_source_row(&self) -> Option<&SourceRow> {
        let o = self.overview()?;
        let s = self.sel_source.as_deref()?;
        o.sources.iter().find(|r| r.source == s)
    }

    /// The verdict of a source: from its loaded data, else from its verdict job.
    pub fn verdict(&self, source: &str) -> Option<Load<&VerdictView>> {
        if let Some(d) = self.source_data(source) {
            if let Some(v) = &d.verdict {
                return Some(Load::Ready(v));
            }
        }
        self.load_of(&LoadJob::Verdict(source.to_string()), |l| match l {
            Loaded::Verdict(v) => Some(v),
            _ => None,
        })
    }

    /// The replay job of the current run choice.
    pub fn replay_job(&self) -> LoadJob {
        LoadJob::Replay(self.run.clone())
    }

    /// The loaded replay run (`Ready(None)`: the store has no runs).
    pub fn replay(&self) -> Option<Load<Option<&Arc<ReplayData>>>> {
        self.load_of(&self.replay_job(), |l| match l {
            Loaded::Replay(r) => Some(r.as_ref()),
            _ => None,
        })
    }

    /// The loaded replay run, when there is one.
    pub fn replay_data(&self) -> Option<&Arc<ReplayData>> {
        match self.replay() {
            Some(Load::Ready(Some(r))) => Some(r),
            _ => None,
        }
    }

    /// The request-list job of the selected policy.
    pub fn requests_job(&self) -> Option<LoadJob> {
        let r = self.replay_data()?;
        Some(LoadJob::Requests {
            run: r.run.run_id.clone(),
            policy: self.sel_policy.clone()?,
        })
    }

    /// The listed requests of the selected policy.
    pub fn requests(&self) -> Option<Load<&Arc<RequestList>>> {
        self.load_of(&self.requests_job()?, |l| match l {
            Loaded::Requests(r) => Some(r),
            _ => None,
        })
    }

    /// The explanation job of the selected request.
    pub fn explain_job(&self) -> Option<LoadJob> {
        let r = self.replay_data()?;
        Some(LoadJob::Explain {
            run: r.run.run_id.clone(),
            policy: self.sel_policy.clone()?,
            key: self.sel_request?,
        })
    }

    /// The explanation of the selected request.
    pub fn explain(&self) -> Option<Load<&Arc<RequestExplain>>> {
        self.load_of(&self.explain_job()?, |l| match l {
            Loaded::Explain(r) => Some(r),
            _ => None,
        })
    }

    /// The trigger key of the current selection.
    pub fn trigger_key(&self) -> Option<TriggerKey> {
        let source = self.sel_source.clone()?;
        self.source_data(&source)?;
        Some(TriggerKey {
            source,
            from: self.sel_node.clone().unwrap_or_else(|| POOLED.to_string()),
            to: self.sel_dest.clone().unwrap_or_else(|| POOLED.to_string()),
            context: TRIGGER_CONTEXTS
                .get(self.context_idx)
                .copied()
                .unwrap_or(4500),
        })
    }

    /// The trigger table of the current selection.
    pub fn trigger(&self) -> Option<Load<&Arc<TriggerData>>> {
        self.load_of(&LoadJob::Trigger(self.trigger_key()?), |l| match l {
            Loaded::Trigger(t) => Some(t),
            _ => None,
        })
    }

    /// Filter text of a list.
    pub fn filter(&self, list: List) -> &str {
        &self.filters[list.slot()]
    }

    /// Sort of a list.
    pub fn sort(&self, list: List) -> Sort {
        self.sorts[list.slot()]
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
        }
    }

    /// Position of the selection in the visible list of `list`.
    pub fn selected_index(&self, list: List) -> Option<usize> {
        let (keys, sel) = self.list_keys(list);
        let sel = sel?;
        keys.iter().position(|k| *k == sel)
    }

    /// Makes every selection valid (defaults once data arrives) and queues the loads the
    /// current screen needs.
    pub(crate) fn normalize(&mut self) {
        // Default source: the one the shown run replayed, else the first with nodes.
        let pick = self.overview().and_then(|o| {
            let visible = self.visible_sources();
            let valid = self
                .sel_source
                .as_ref()
                .is_some_and(|s| visible.iter().any(|r| &r.source == s));
            if valid || visible.is_empty() {
                return None;
            }
            let run_source = match &self.run {
                Some(id) => o.runs.iter().find(|r| &r.run_id == id),
                None => o.runs.first(),
            }
            .map(|r| r.nodes_source.clone())
            .filter(|s| self.sel_source.is_none() && visible.iter().any(|r| &r.source == s));
            run_source
                .or_else(|| {
                    visible
                        .iter()
                        .find(|r| r.nodes > 0)
                        .map(|r| r.source.clone())
                })
                .or_else(|| visible.first().map(|r| r.source.clone()))
        });
        if let Some(p) = pick {
            self.set_selected(List::Sources, p);
        }
        for list in [
            List::Nodes,
            List::Policies,
            List::Requests,
            List::Destinations,
        ] {
            let (keys, sel) = self.list_keys(list);
            let valid = sel.as_ref().is_some_and(|s| keys.contains(s));
            if !valid {
                if let Some(first) = keys.first() {
                    self.set_selected(list, first.clone());
                }
            }
        }
        self.ensure_data();
    }

    fn ensure_data(&mut self) {
        self.request(LoadJob::Overview);
        let Some(o) = self.overview() else {
            return;
        };
        let has_runs = !o.runs.is_empty() || self.run.is_some();
        let availability: Vec<String> = o
            .sources
            .iter()
            .filter(|r| r.nodes > 0)
            .map(|r| r.source.clone())
            .collect();
        if let Some(s) = self.selected_source_row() {
            if s.nodes > 0 {
                let job = LoadJob::Source(s.source.clone());
                self.request(job);
            }
        }
        if has_runs || matches!(self.screen, Screen::Replay | Screen::Request) {
            self.request(self.replay_job());
        }
        if self.screen == Screen::Request {
            if let Some(j) = self.requests_job() {
                self.request(j);
            }
            if let Some(j) = self.explain_job() {
                self.request(j);
            }
        }
        if self.screen == Screen::Trigger {
            if let Some(k) = self.trigger_key() {
                self.request(LoadJob::Trigger(k));
            }
        }
        // Background: the verdicts of the sources list.
        for s in availability {
            if !self.loads.contains_key(&LoadJob::Source(s.clone())) {
                self.request(LoadJob::Verdict(s));
            }
        }
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
