//! `hazardserve tui`: a terminal UI over the store, read-only, for looking at what the other
//! commands computed.
//!
//! Screens (Tab / Shift-Tab or 1-7): 1 **Sources** (counts, censoring, span, hazard shape),
//! 2 **Nodes** of the selected source (sortable, with an up/down strip per node), 3 **Survival**
//! of the selected node (its Kaplan-Meier curve, its shrunk curve, the pooled curve with its
//! band, at-risk counts, conditional survival at its current age), 4 **Replay** (the policy
//! comparison of a run with CIs, completion-time CDFs, the oracle gap), 5 **Request** (one
//! request's timeline with the `E = T + L` numbers behind each decision), 6 **Trigger**
//! (`risk_gain` against uptime for a node pair and a context size) and 7 **Sweep** (the regime
//! map of a stored sweep; Enter opens a cell's comparison on the Replay screen). `r` reloads
//! the store.
//!
//! Architecture (Elm-like): [`app::App`] is the state, [`app::Msg`] what happens to it,
//! [`update::update`] the only code that changes it (key handling included), and
//! [`view::view`] a pure function drawing a frame from it. [`data`] holds the view models and
//! the [`data::LoadJob`]s that produce them: `update` queues jobs, the [`worker`] thread runs them
//! with a [`loader::Loader`] against the store and sends the results back as messages, so
//! loading never blocks drawing (a spinner shows what runs). [`terminal`] restores the terminal
//! on every exit path.
//!
//! The TUI computes nothing itself and never talks to DuckDB: store rows come from
//! [`crate::queries::Reader`], the per-node statistics (median up-time, current age, shrinkage
//! weight) from [`crate::fit::fit_nodes`], request explanations from
//! [`crate::scenario::explain`], whose docs define them.

#![warn(missing_docs)]

pub mod app;
pub mod component;
pub mod data;
mod fault;
pub mod lists;
pub mod loader;
pub mod screens;
pub mod terminal;
pub mod update;
pub mod view;
pub mod widgets;
pub mod worker;

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use crossterm::event::{self, Event};

use app::{App, Msg};
use fault::fault;
use update::update;

/// `tui` arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Keys: Tab/Shift-Tab or 1-7 switch screens, j/k move, Enter drills down, / filters, s sorts, r reloads the store, ? shows the help, q quits.

Examples:
  hazardserve tui
  hazardserve --store /tmp/demo-store tui --run run-demo"
)]
pub struct TuiArgs {
    /// Replay run to show on the Replay and Request screens (default: the latest).
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
}

/// Spinner period while something loads.
const TICK: Duration = Duration::from_millis(80);

/// Opens the TUI on the store at `store` (read-only) until the user quits; `run` picks the
/// replay run shown (default: the latest). Fails when standard output is not a terminal.
pub fn run(store: &Path, run: Option<String>) -> anyhow::Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "hazardserve tui needs a terminal; for text output use `hazardserve sources`, `fit` or `compare`"
        );
    }
    let (tx, rx) = mpsc::channel::<Msg>();
    let worker = worker::Worker::spawn(store, tx.clone())?;
    let mut app = App::new(run);
    // https://no-color.org: set and not empty.
    app.no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let mut guard = terminal::setup().context("opening the terminal UI")?;
    let stop = Arc::new(AtomicBool::new(false));
    let input = {
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("hazardserve-tui-input".into())
            .spawn(move || input_loop(&tx, &stop))
            .context("starting the input thread")?
    };
    let result = event_loop(&mut guard, &mut app, &worker, &rx);
    stop.store(true, Ordering::SeqCst);
    drop(guard);
    let _ = input.join();
    // The loader may be inside a job: let it finish (its result has nowhere to go, so it
    // starts nothing else) before the process exits and tears down the database it uses.
    drop(rx);
    worker.finish();
    result
}

/// Forwards key and resize events to the event loop until `stop`.
fn input_loop(tx: &mpsc::Sender<Msg>, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        match event::poll(Duration::from_millis(50)) {
            Ok(true) => {
                let msg = match event::read() {
                    Ok(Event::Key(k)) => Msg::Key(k),
                    Ok(Event::Resize(w, h)) => Msg::Resize(w, h),
                    Ok(_) => continue,
                    Err(_) => return,
                };
                if tx.send(msg).is_err() {
                    return;
                }
            }
            Ok(false) => {}
            Err(_) => return,
        }
    }
}

fn event_loop(
    guard: &mut terminal::TerminalGuard,
    app: &mut App,
    worker: &worker::Worker,
    rx: &Receiver<Msg>,
) -> anyhow::Result<()> {
    let mut first = true;
    loop {
        for job in app.take_jobs() {
            worker.send(job);
        }
        guard
            .terminal
            .draw(|f| view::view(app, f))
            .context("drawing")?;
        if std::mem::take(&mut first) && fault("tui-panic") {
            panic!("injected fault (HAZARDSERVE_FAULT=tui-panic)");
        }
        if app.quit {
            return Ok(());
        }
        let timeout = if app.is_loading() {
            TICK
        } else {
            Duration::from_secs(3600)
        };
        match rx.recv_timeout(timeout) {
            Ok(m) => {
                update(app, m);
                // Apply whatever else is waiting before redrawing.
                while let Ok(m) = rx.try_recv() {
                    update(app, m);
                }
            }
            Err(RecvTimeoutError::Timeout) => update(app, Msg::Tick),
            Err(RecvTimeoutError::Disconnected) => return Ok(()),
        }
    }
}
