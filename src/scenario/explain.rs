//! Why a stored request went where it went: the request screen's timeline.
//!
//! The store keeps each request's outcome, not the policy's reasoning. [`explain_request`]
//! re-runs the single (policy, window, seed, parameter point) run of the request from the run's
//! stored scenario ([`rebuild`]) with the engine's decision log on
//! ([`ReplayConfig::decision_log`]), keeps the decisions about that request (candidates priced
//! only for it), adds the failures of the nodes it ran on, and checks that the re-run
//! reproduces the stored record.

use anyhow::{anyhow, Context};

use super::{Scenario, ScenarioConfig};
use crate::policy::policies::Decision;
use crate::policy::{ClusterView, Explanation, NodeIdx, Outcome, Policy, PolicyKind, RequestView};
use crate::queries::{Reader, RequestRow};
use crate::replay::{simulate_with, ReplayConfig};
use crate::store::Store;

/// Decisions kept by a re-run at most (memory bound; later decisions are not explained).
pub const DECISION_CAP: usize = 1_000_000;

/// What happened at one moment of a request's life.
#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    /// The request arrived.
    Arrive,
    /// Placed on `node` (queued there when the placement used the queueing view).
    Place {
        /// Placed using the queueing view (pass 2): waits for a slot on the node.
        queued: bool,
    },
    /// No node could take it; it waits in the global queue.
    Wait,
    /// Its node went down.
    Fail,
    /// Migration checks that kept it where it was (consecutive checks merged).
    Stay {
        /// Checks merged into this row.
        checks: u32,
        /// Why it stayed (outcome name).
        reason: String,
    },
    /// Planned move from `node` to `target`.
    Migrate,
    /// First token.
    FirstToken,
    /// Completed.
    Done,
    /// Not finished when the window ended.
    Dropped,
}

/// A candidate node priced by a placement.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Node name.
    pub node: String,
    /// `T`, seconds.
    pub t: f64,
    /// `L` (migration: residual risk `l_j`), seconds.
    pub l: f64,
    /// `E`, seconds.
    pub e: f64,
}

/// One row of a request's timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineEvent {
    /// Seconds after the request's arrival.
    pub at_s: f64,
    /// What happened.
    pub kind: EventKind,
    /// The node concerned (placed on, failed, moved from).
    pub node: Option<String>,
    /// The destination (moves and stays: the best candidate).
    pub target: Option<String>,
    /// `T`, seconds (NaN when not applicable).
    pub t: f64,
    /// `L`, seconds.
    pub l: f64,
    /// `E = T + L`, seconds.
    pub e: f64,
    /// `risk_gain`, seconds (migration).
    pub risk_gain: f64,
    /// `dT`, seconds (migration).
    pub dt: f64,
    /// `C_planned`, seconds (migration).
    pub c_planned: f64,
    /// Hysteresis `h` applied, seconds.
    pub h: f64,
    /// Nodes looked at / feasible.
    pub considered: (u32, u32),
    /// Candidates priced (placements).
    pub candidates: Vec<Candidate>,
}

impl TimelineEvent {
    /// An event of `kind` at `at_s` with no numbers.
    pub fn new(at_s: f64, kind: EventKind) -> TimelineEvent {
        TimelineEvent {
            at_s,
            kind,
            node: None,
            target: None,
            t: f64::NAN,
            l: f64::NAN,
            e: f64::NAN,
            risk_gain: f64::NAN,
            dt: f64::NAN,
            c_planned: f64::NAN,
            h: f64::NAN,
            considered: (0, 0),
            candidates: Vec::new(),
        }
    }
}

/// A request's prompt prefix under prefix caching: what its first prefill read from cache and
/// which nodes held a leading part of its prompt when it was first placed.
#[derive(Debug, Clone, PartialEq)]
pub struct PrefixStory {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Prompt tokens the prefill that gave its first token read from its node's cache.
    pub hit_tokens: u64,
    /// The up nodes whose caches held a leading part of its prompt at its first placement, as
    /// the placing policy's view said (a router sees every up node, a cost-based policy the
    /// candidates of its pass), with the tokens each held, most first.
    pub holders: Vec<(String, u64)>,
}

/// A request's timeline with the numbers behind each decision.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestExplain {
    /// Events, in time order.
    pub events: Vec<TimelineEvent>,
    /// Seconds from arrival to completion (or to the end of the window).
    pub end_s: f64,
    /// The re-run reproduced the stored record.
    pub matches_stored: bool,
    /// How the explanation was obtained and any caveat.
    pub note: String,
    /// Its prefix and where it was cached, when the run's nodes cache prefixes and the request
    /// has prefix blocks.
    pub prefix: Option<PrefixStory>,
}

/// Rebuilds the scenario of the stored run `run` from its stored configuration.
pub fn rebuild(store: &Store, run: &str) -> anyhow::Result<Scenario> {
    let config = Reader::open(store)?
        .run_config(run)
        .map_err(|e| anyhow!("run {run}: {e}"))?;
    let cfg = ScenarioConfig::from_toml(&config, &format!("scenario of {run}"))
        .map_err(anyhow::Error::msg)?;
    super::build(store, &cfg).with_context(|| format!("rebuilding the scenario of {run}"))
}

/// Explains the stored request `stored` of `policy` at parameter point `param` (`default` or
/// `overlap`) of run `run`, whose scenario is `sc` (module docs).
pub(crate) fn explain_request(
    sc: &Scenario,
    run: &str,
    policy: &str,
    param: &str,
    stored: &RequestRow,
) -> anyhow::Result<RequestExplain> {
    let key = stored.key();
    let display = if param == "overlap" {
        format!("{policy} --overlap")
    } else {
        policy.to_string()
    };
    let kind: PolicyKind = policy.parse().map_err(|e| anyhow!("run {run}: {e}"))?;
    let specs = sc.grid.specs(&sc.config);
    let spec = specs
        .iter()
        .find(|s| {
            s.policy == kind
                && s.window_index as i64 == key.window
                && s.seed == key.seed
                && (s.param_label == param || (s.param_label.is_empty() && param == "default"))
        })
        .with_context(|| {
            format!(
                "the scenario of {run} has no run of {display} in window {} with seed {} (was the store changed since?)",
                key.window, key.seed
            )
        })?;
    let cfg = ReplayConfig {
        decision_log: DECISION_CAP,
        ..sc.config
    };
    let mut policy = Recording {
        inner: crate::policy::build(spec.policy, spec.params, spec.policy_seed()),
        target: key.request,
        holders: None,
        placed: false,
    };
    let out = simulate_with(&sc.cluster, &sc.workload, &cfg, spec, &mut policy)?;
    let rec = out
        .records
        .get(key.request as usize)
        .with_context(|| format!("the re-run has no request #{}", key.request))?;
    let names: Vec<&str> = sc.cluster.nodes.iter().map(|n| n.name.as_str()).collect();
    let name = |i: Option<NodeIdx>| i.and_then(|i| names.get(i).map(|s| s.to_string()));
    let matches = rec.completion_s == stored.completion_s
        && rec.interruptions == stored.interruptions
        && rec.planned_migrations == stored.migrations
        && name(rec.first_node.map(|x| x as usize)) == stored.first_node
        && name(rec.final_node.map(|x| x as usize)) == stored.final_node;
    let window_start = spec.window.start_us;
    let arrival = stored.arrival_s;
    let at = |us: i64| (us - window_start) as f64 / 1e6 - arrival;
    let end_s = match stored.completion_s {
        Some(c) => c,
        None => (spec.window.length_s() - arrival).max(0.0),
    };
    let mut events = vec![TimelineEvent::new(0.0, EventKind::Arrive)];
    let mut capped = out.decisions.len() >= DECISION_CAP;
    let mut seen_any = false;
    for d in out
        .decisions
        .iter()
        .filter(|d| d.explanation.request == key.request)
    {
        seen_any = true;
        let x = &d.explanation;
        let mut ev = TimelineEvent::new(at(d.time_us), EventKind::Arrive);
        ev.t = x.t;
        ev.l = x.l;
        ev.e = x.e;
        ev.considered = (x.considered, x.feasible);
        ev.h = x.hysteresis_s;
        match (x.decision, x.outcome) {
            (Decision::Place, Outcome::Placed) => {
                ev.kind = EventKind::Place { queued: d.queueing };
                ev.node = name(x.chosen);
                ev.candidates = x
                    .candidates
                    .iter()
                    .map(|c| Candidate {
                        node: name(Some(c.node)).unwrap_or_else(|| c.node.to_string()),
                        t: c.t,
                        l: c.l,
                        e: c.e,
                    })
                    .collect();
            }
            (Decision::Place, _) => {
                ev.kind = EventKind::Wait;
            }
            (Decision::Migrate, Outcome::Migrate) => {
                ev.kind = EventKind::Migrate;
                ev.node = name(x.from);
                ev.target = name(x.chosen);
                ev.risk_gain = x.risk_gain;
                ev.dt = x.dt;
                ev.c_planned = x.c_planned;
                ev.l = x.l;
            }
            (Decision::Migrate, outcome) => {
                let reason = serde_json::to_value(outcome)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_else(|| format!("{outcome:?}"));
                ev.node = name(x.from);
                ev.target = name(x.target);
                ev.risk_gain = x.risk_gain;
                ev.dt = x.dt;
                ev.c_planned = x.c_planned;
                // Merge with the previous row when it is the same kind of stay.
                if let Some(prev) = events.last_mut() {
                    if let EventKind::Stay { checks, reason: r } = &mut prev.kind {
                        if *r == reason {
                            *checks += 1;
                            if ev.risk_gain > prev.risk_gain || prev.risk_gain.is_nan() {
                                prev.risk_gain = ev.risk_gain;
                                prev.dt = ev.dt;
                                prev.target = ev.target.clone();
                                prev.c_planned = ev.c_planned;
                            }
                            continue;
                        }
                    }
                }
                ev.kind = EventKind::Stay { checks: 1, reason };
            }
        }
        events.push(ev);
    }
    // Failures: a stint on a node ends early when the node's session ends first.
    let stints: Vec<(f64, String)> = events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Place { .. } => e.node.clone().map(|n| (e.at_s, n)),
            EventKind::Migrate => e.target.clone().map(|n| (e.at_s, n)),
            _ => None,
        })
        .collect();
    let mut failures = Vec::new();
    for (k, (start, node)) in stints.iter().enumerate() {
        let stint_end = stints.get(k + 1).map_or(end_s, |s| s.0);
        let Some(n) = sc.cluster.nodes.iter().find(|n| &n.name == node) else {
            continue;
        };
        let t_abs = window_start + ((arrival + start) * 1e6).round() as i64;
        if let Some(s) = n
            .sessions
            .iter()
            .find(|s| s.start_us <= t_abs && t_abs < s.end_us)
        {
            let fail_at = at(s.end_us);
            // A stint followed by another ends when the node fails or at a planned move;
            // the last one ends at completion.
            let failed = if k + 1 < stints.len() {
                fail_at <= stint_end + 1e-6
            } else {
                fail_at < stint_end - 1e-9
            };
            if failed {
                let mut ev = TimelineEvent::new(fail_at, EventKind::Fail);
                ev.node = Some(node.clone());
                failures.push(ev);
            }
        }
    }
    events.extend(failures);
    if let Some(t) = stored.ttft_s {
        events.push(TimelineEvent::new(t, EventKind::FirstToken));
    }
    let mut last = TimelineEvent::new(
        end_s,
        if stored.completion_s.is_some() {
            EventKind::Done
        } else {
            EventKind::Dropped
        },
    );
    last.node = stored.final_node.clone();
    events.push(last);
    // Time order; at equal times a failure precedes the re-placement it causes.
    let rank = |k: &EventKind| match k {
        EventKind::Arrive => 0,
        EventKind::Fail => 1,
        EventKind::Done | EventKind::Dropped => 3,
        _ => 2,
    };
    events.sort_by(|a, b| {
        a.at_s
            .total_cmp(&b.at_s)
            .then(rank(&a.kind).cmp(&rank(&b.kind)))
    });
    if seen_any {
        capped = false;
    }
    let mut note = format!(
        "Re-ran window {}, seed {} with the decision log on",
        key.window, key.seed
    );
    if matches {
        note.push_str(": it reproduces the stored record.");
    } else {
        note.push_str(
            ": WARNING, it differs from the stored record (did the store change since the run?).",
        );
    }
    if capped {
        note.push_str(&format!(
            "; the decision log stopped after {DECISION_CAP} decisions, before this request"
        ));
    }
    let cached = sc.config.prefix_cache
        && sc
            .workload
            .prefixes
            .get(key.request as usize)
            .is_some_and(|p| !p.blocks.is_empty());
    let prefix = cached.then(|| {
        let mut holders: Vec<(String, u64)> = policy
            .holders
            .take()
            .unwrap_or_default()
            .into_iter()
            .map(|(i, tokens)| (name(Some(i)).unwrap_or_else(|| i.to_string()), tokens))
            .collect();
        holders.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        PrefixStory {
            prompt_tokens: rec.prompt_tokens,
            hit_tokens: rec.prefix_hit_tokens,
            holders,
        }
    });
    Ok(RequestExplain {
        events,
        end_s,
        matches_stored: matches,
        note,
        prefix,
    })
}

/// Wraps a policy to record every candidate of the decisions about one request only, and the
/// nodes its view says hold that request's prefix at its first placement.
struct Recording {
    inner: Box<dyn Policy>,
    target: u64,
    holders: Option<Vec<(NodeIdx, u64)>>,
    placed: bool,
}

impl Policy for Recording {
    fn kind(&self) -> PolicyKind {
        self.inner.kind()
    }

    fn place(
        &mut self,
        view: &ClusterView<'_>,
        req: &RequestView,
        out: &mut Explanation,
    ) -> Option<NodeIdx> {
        out.record_candidates = req.id == self.target;
        if !out.record_candidates || self.placed {
            return self.inner.place(view, req, out);
        }
        // Every pass of the first placement (a cost-based policy's free nodes, then the
        // queueing pass over every up node) adds the holders it sees.
        let holders = self.holders.get_or_insert_with(Vec::new);
        for (i, n) in view.nodes.iter().enumerate() {
            if n.up && n.cached_tokens > 0 {
                match holders.iter_mut().find(|h| h.0 == i) {
                    Some(h) => h.1 = h.1.max(n.cached_tokens),
                    None => holders.push((i, n.cached_tokens)),
                }
            }
        }
        let choice = self.inner.place(view, req, out);
        self.placed = choice.is_some();
        choice
    }

    fn check_migration(
        &mut self,
        view: &ClusterView<'_>,
        req: &RequestView,
        from: NodeIdx,
        out: &mut Explanation,
    ) -> Option<NodeIdx> {
        out.record_candidates = req.id == self.target;
        self.inner.check_migration(view, req, from, out)
    }
}
