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
    LoadJob, Loaded, Overview, PolicyPoint, ReplayData, RequestExplain, RequestKey, RequestList,
    SourceData, SourceRow, SweepData, TriggerData, TriggerKey, VerdictView, POOLED,
    TRIGGER_CONTEXTS,
};

/// A screen, by its id: the [`super::component::Component`] of that id in
/// [`super::screens::REGISTRY`] draws it and handles its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Screen(pub &'static str);

impl Screen {
    /// The screen the TUI opens on.
    pub const HOME: Screen = Screen("sources");
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
    /// Cells of the regime map (filtered by their row's axis values).
    Cells,
}

impl List {
    /// The sort columns of the list (empty: not sortable).
    pub fn sort_columns(self) -> &'static [&'static str] {
        match self {
            List::Sources => &["name", "nodes", "sessions", "censored", "span"],
            List::Nodes => &["node", "sessions", "median", "age", "weight"],
            List::Policies => &["run order", "mean", "p99", "interruptions", "gap closed"],
            List::Requests => &["eventful", "completion", "arrival", "request"],
            List::Destinations | List::Cells => &[],
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
    /// Filter text per list (none: no filter).
    pub filters: HashMap<List, String>,
    /// Sort per list (none: the default sort).
    pub sorts: HashMap<List, Sort>,
    /// The sweep to show (switched with `[`/`]` on the Sweep screen); `None`: the latest.
    pub sweep: Option<String>,
    /// Selected cell of the regime map (its key).
    pub sel_cell: Option<String>,
    /// The sweep cell whose comparison the Replay screen shows instead of a run.
    pub cell: Option<String>,
    /// Index into [`crate::sweep::MAP_METRICS`]: the metric the map colours by.
    pub map_metric: usize,
    /// Reloads asked for so far (tells reload jobs apart).
    pub reloads: u64,
    /// Draw without colours (`NO_COLOR` is set).
    pub no_color: bool,
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
            screen: Screen::HOME,
            run,
            loads: HashMap::new(),
            in_flight: Vec::new(),
            sel_source: None,
            sel_node: None,
            sel_policy: None,
            sel_request: None,
            sel_dest: None,
            context_idx: 3,
            filters: HashMap::new(),
            sorts: HashMap::new(),
            sweep: None,
            sel_cell: None,
            cell: None,
            map_metric: 0,
            reloads: 0,
            no_color: false,
            input: None,
            help: false,
            quit: false,
            tick: 0,
            notice: None,
            size: (0, 0),
            outbox: Vec::new(),
        };
        app.normalize();
        app.request_loads(Vec::new());
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

    /// The loaded replay run (`Ready(None)`: the store has no runs), or the comparison of the
    /// sweep cell opened from the Sweep screen.
    pub fn replay(&self) -> Option<Load<Option<&Arc<ReplayData>>>> {
        if let Some(key) = &self.cell {
            return self.load_of(&self.sweep_job(), |l| match l {
                Loaded::Sweep(Some(s)) => s.cell(key).map(|c| Some(&c.replay)),
                _ => None,
            });
        }
        self.load_of(&self.replay_job(), |l| match l {
            Loaded::Replay(r) => Some(r.as_ref()),
            _ => None,
        })
    }

    /// The sweep job of the current sweep choice.
    pub fn sweep_job(&self) -> LoadJob {
        LoadJob::Sweep(self.sweep.clone())
    }

    /// The loaded sweep (`Ready(None)`: the store has no sweeps).
    pub fn sweep_load(&self) -> Option<Load<Option<&Arc<SweepData>>>> {
        self.load_of(&self.sweep_job(), |l| match l {
            Loaded::Sweep(s) => Some(s.as_ref()),
            _ => None,
        })
    }

    /// The loaded sweep, when there is one.
    pub fn sweep_data(&self) -> Option<&Arc<SweepData>> {
        match self.sweep_load() {
            Some(Load::Ready(Some(s))) => Some(s),
            _ => None,
        }
    }

    /// Forgets everything loaded and reads the store again (its contents may have changed).
    pub fn reload(&mut self) {
        self.reloads += 1;
        self.loads.clear();
        self.in_flight.clear();
        self.outbox.clear();
        self.request(LoadJob::Reload(self.reloads));
    }

    /// True while a reload waits for the loader to empty its caches.
    pub fn reloading(&self) -> bool {
        self.in_flight
            .iter()
            .any(|j| matches!(j, LoadJob::Reload(_)))
    }

    /// The loaded replay run, when there is one.
    pub fn replay_data(&self) -> Option<&Arc<ReplayData>> {
        match self.replay() {
            Some(Load::Ready(Some(r))) => Some(r),
            _ => None,
        }
    }

    /// The request-list job of the selected policy (none for a sweep cell: cells keep no
    /// requests).
    pub fn requests_job(&self) -> Option<LoadJob> {
        if self.cell.is_some() {
            return None;
        }
        let r = self.replay_data()?;
        Some(LoadJob::Requests {
            run: r.run.run_id.clone(),
            policy: self.selected_point(r)?,
        })
    }

    /// The selected policy of run `r` at its parameter point.
    fn selected_point(&self, r: &ReplayData) -> Option<PolicyPoint> {
        let name = self.sel_policy.as_deref()?;
        r.rows.iter().find(|p| p.name == name).map(PolicyPoint::of)
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
        if self.cell.is_some() {
            return None;
        }
        let r = self.replay_data()?;
        Some(LoadJob::Explain {
            run: r.run.run_id.clone(),
            policy: self.selected_point(r)?,
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

    /// Makes every selection valid (defaults once data arrives).
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
            List::Cells,
        ] {
            let (keys, sel) = self.list_keys(list);
            let valid = sel.as_ref().is_some_and(|s| keys.contains(s));
            if !valid {
                if let Some(first) = keys.first() {
                    self.set_selected(list, first.clone());
                }
            }
        }
    }

    /// Queues the loads the shown screen needs: the overview, `screen_jobs` (the screen's own,
    /// [`super::component::Component::jobs`]), a pinned sweep cell's sweep, the selected
    /// source, the shown run when the store has runs, and the verdicts of the sources list.
    pub(crate) fn request_loads(&mut self, screen_jobs: Vec<LoadJob>) {
        if self.reloading() {
            return;
        }
        self.request(LoadJob::Overview);
        for job in screen_jobs {
            self.request(job);
        }
        if self.cell.is_some() {
            self.request(self.sweep_job());
        }
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
        if has_runs {
            self.request(self.replay_job());
        }
        // Background: the verdicts of the sources list.
        for s in availability {
            if !self.loads.contains_key(&LoadJob::Source(s.clone())) {
                self.request(LoadJob::Verdict(s));
            }
        }
    }
}
