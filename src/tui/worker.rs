//! The loader thread: runs a [`Loader`] off the render path and sends each result back to the
//! event loop as a [`Msg::Loaded`], so the screen keeps redrawing (with a spinner) however large
//! the store is.
//!
//! The worker runs the most recently requested interactive job first, runs background jobs
//! (the hazard verdicts of the sources list) only when nothing interactive waits, and drops
//! superseded source loads, re-runs and trigger tables (only the newest of each kind is still on
//! screen; a dropped job is asked for again if it is needed again).

use std::collections::HashSet;
use std::path::Path;
use std::sync::mpsc::{Receiver, Sender};

use anyhow::Context;

use super::app::Msg;
use super::data::LoadJob;
use super::loader::Loader;

/// Runs a [`Loader`] on a background thread.
pub struct Worker {
    tx: Sender<LoadJob>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    /// Starts the thread; results come back on `out` as [`Msg::Loaded`] (or [`Msg::Dropped`]
    /// for superseded jobs). The thread ends when the worker is dropped, or when `out`'s
    /// receiver is gone, once its current job finishes ([`Worker::finish`] waits for that).
    pub fn spawn(root: &Path, out: Sender<Msg>) -> anyhow::Result<Worker> {
        let (tx, rx) = std::sync::mpsc::channel::<LoadJob>();
        let loader = Loader::new(root);
        let handle = std::thread::Builder::new()
            .name(super::terminal::LOADER_THREAD.into())
            .spawn(move || worker_loop(loader, rx, out))
            .context("starting the loader thread")?;
        Ok(Worker {
            tx,
            handle: Some(handle),
        })
    }

    /// Stops the thread and waits for it: its current job (if any) finishes, queued ones are
    /// not started. Call it after dropping the receiver of `out`, before the process exits,
    /// so that no job is still inside the store's database while the process tears it down.
    pub fn finish(mut self) {
        let handle = self.handle.take();
        drop(self);
        if let Some(h) = handle {
            let _ = h.join();
        }
    }

    /// Queues a job (ignored once the thread has stopped).
    pub fn send(&self, job: LoadJob) {
        let _ = self.tx.send(job);
    }
}

/// Picks the next job: the newest interactive one, else the oldest background one; drops
/// superseded jobs (reported on `out`).
fn next_job(queue: &mut Vec<LoadJob>, out: &Sender<Msg>) -> Option<LoadJob> {
    let mut newest: HashSet<u8> = HashSet::new();
    let mut keep = vec![true; queue.len()];
    for (i, j) in queue.iter().enumerate().rev() {
        if let Some(kind) = j.supersedable() {
            if !newest.insert(kind) {
                keep[i] = false;
            }
        }
    }
    let mut kept = Vec::with_capacity(queue.len());
    for (j, k) in queue.drain(..).zip(keep) {
        if k {
            kept.push(j);
        } else {
            let _ = out.send(Msg::Dropped(j));
        }
    }
    *queue = kept;
    let pos = queue
        .iter()
        .rposition(|j| !j.is_background())
        .or_else(|| (!queue.is_empty()).then_some(0))?;
    Some(queue.remove(pos))
}

fn worker_loop(mut loader: Loader, rx: Receiver<LoadJob>, out: Sender<Msg>) {
    let mut queue: Vec<LoadJob> = Vec::new();
    loop {
        if queue.is_empty() {
            match rx.recv() {
                Ok(j) => queue.push(j),
                Err(_) => return,
            }
        }
        while let Ok(j) = rx.try_recv() {
            queue.push(j);
        }
        let Some(job) = next_job(&mut queue, &out) else {
            continue;
        };
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| loader.run(&job)))
            .unwrap_or_else(|p| {
                let what = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "unknown panic".into());
                Err(format!("internal error while {}: {what}", job.describe()))
            });
        if out.send(Msg::Loaded(job, result)).is_err() {
            return;
        }
    }
}
