//! Screen 5: one request's life (placement, failures, migrations) with the numbers behind each
//! decision: `T`, `L`, `E = T + L` of the candidates of each placement, `risk_gain` and `dT` of
//! each migration check. The store keeps outcomes only; the explanations come from re-running
//! the request's window with the decision log on (see [`crate::scenario::explain`]).

use std::collections::HashMap;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState, Wrap};
use ratatui::Frame;

use crate::tui::app::{App, List, Load, Screen};
use crate::tui::component::Component;
use crate::tui::data::{
    shared_prefix, EventKind, LoadJob, PrefixStory, RequestExplain, RequestRow, TimelineEvent,
};
use crate::tui::widgets::{
    block, dim, fmt_secs, header_style, load_status, message, replay_or_message, selected_style,
    truncate, PALETTE,
};

/// The request's prefix in one line: the prompt tokens its first prefill read from cache, and
/// the nodes that held a leading part of its prompt when it was first placed.
fn prefix_line(p: &PrefixStory) -> Line<'static> {
    let pct = if p.prompt_tokens > 0 {
        100.0 * p.hit_tokens as f64 / p.prompt_tokens as f64
    } else {
        0.0
    };
    let held = if p.holders.is_empty() {
        "no node held it at placement".to_string()
    } else {
        let names: Vec<String> = p.holders.iter().map(|h| h.0.clone()).collect();
        let cut = if names.len() > 1 {
            shared_prefix(&names)
        } else {
            0
        };
        let shown: Vec<String> = p
            .holders
            .iter()
            .take(4)
            .map(|(n, t)| format!("{} {t}", short(n, cut)))
            .collect();
        let more = p.holders.len().saturating_sub(4);
        format!(
            "held at placement by {}{}",
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        )
    };
    Line::from(vec![
        Span::styled("prefix ", dim()),
        Span::raw(format!(
            "{} of {} prompt tokens from cache ({pct:.1} %)",
            p.hit_tokens, p.prompt_tokens
        )),
        Span::styled(format!(" · {held} (tokens)"), dim()),
    ])
}

fn short(name: &str, prefix: usize) -> &str {
    name.get(prefix..).filter(|s| !s.is_empty()).unwrap_or(name)
}

/// Draws the request screen.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let Some(r) = replay_or_message(app, f, area, "Request") else {
        return;
    };
    let Some(policy) = app.sel_policy.clone() else {
        f.render_widget(
            message(
                "Request",
                vec![Line::from("Pick a policy on screen 4 (Replay).")],
            ),
            area,
        );
        return;
    };
    if let Some(cell) = &app.cell {
        f.render_widget(
            message(
                "Request",
                vec![
                    Line::from(format!("Sweep cell {cell}")),
                    Line::from(
                        "A sweep cell keeps its comparison, not its requests: replay the cell's \
                         scenario (`hazardserve replay --config`) to see them, or press [ on \
                         screen 4 for the stored runs.",
                    ),
                ],
            ),
            area,
        );
        return;
    }
    let list = match app.requests() {
        Some(Load::Ready(l)) => l,
        other => {
            f.render_widget(
                message(
                    "Request",
                    vec![load_status(
                        &format!("Listing the requests of {policy}"),
                        other.as_ref(),
                    )],
                ),
                area,
            );
            return;
        }
    };
    let wide = area.width >= 120;
    let list_w = if wide { 40 } else { 24 };
    let [left, right] =
        Layout::horizontal([Constraint::Length(list_w), Constraint::Min(20)]).areas(area);
    let rows = app.visible_requests(list);
    let mut list_nodes: Vec<String> = list
        .rows
        .iter()
        .flat_map(|q| [q.first_node.clone(), q.final_node.clone()])
        .flatten()
        .collect();
    list_nodes.sort();
    list_nodes.dedup();
    let list_prefix = if list_nodes.len() > 1 {
        shared_prefix(&list_nodes)
    } else {
        0
    };

    // The list.
    let body: Vec<Row> = rows
        .iter()
        .map(|q| {
            let flags = format!(
                "{}{}",
                if q.interruptions > 0 {
                    format!("{}✗", q.interruptions)
                } else {
                    String::new()
                },
                if q.migrations > 0 {
                    format!("{}»", q.migrations)
                } else {
                    String::new()
                }
            );
            let done = q
                .completion_s
                .map_or("drop".to_string(), |c| format!("{c:.1}"));
            let mut cells = vec![
                Cell::from(format!("w{} #{}", q.window, q.request)),
                Cell::from(Span::styled(flags, Style::default().fg(Color::Red))),
                Cell::from(format!("{done:>5}")),
            ];
            if wide {
                cells.push(Cell::from(truncate(
                    q.final_node
                        .as_deref()
                        .map_or("-", |n| short(n, list_prefix)),
                    18,
                )));
            }
            Row::new(cells)
        })
        .collect();
    let mut widths = vec![
        Constraint::Length(if wide { 12 } else { 9 }),
        Constraint::Length(4),
        Constraint::Length(5),
    ];
    if wide {
        widths.push(Constraint::Min(8));
    }
    let mut header = vec!["request", "", "    s"];
    if wide {
        header.push("final node");
    }
    let sort = app.sort(List::Requests);
    let table = Table::new(body, widths)
        .header(Row::new(header).style(header_style()))
        .block(block(if wide {
            format!(
                " {} {}/{} · by {} ",
                truncate(&policy, 16),
                rows.len(),
                list.total,
                List::Requests
                    .sort_columns()
                    .get(sort.column)
                    .copied()
                    .unwrap_or("")
            )
        } else {
            format!(" {} {}/{} ", truncate(&policy, 10), rows.len(), list.total)
        }))
        .row_highlight_style(selected_style())
        .highlight_symbol("▶ ");
    let mut state = TableState::default().with_selected(app.selected_index(List::Requests));
    f.render_stateful_widget(table, left, &mut state);

    // The selected request.
    let Some(q) = app
        .sel_request
        .and_then(|k| list.rows.iter().find(|q| q.key() == k))
    else {
        f.render_widget(
            message("Request", vec![Line::from("No request selected.")]),
            right,
        );
        return;
    };
    let title = format!(
        " Request #{} · window {} · seed {} · {} · {} ",
        q.request, q.window, q.seed, policy, r.run.run_id
    );
    let outer = block(title);
    let inner = outer.inner(right);
    f.render_widget(outer, right);
    let story = match app.explain() {
        Some(Load::Ready(x)) => x.prefix.as_ref().map(prefix_line),
        _ => None,
    };
    let [head, bar, axis, prefix_area, table_area, note_area] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(u16::from(story.is_some())),
        Constraint::Min(2),
        Constraint::Length(2),
    ])
    .areas(inner);
    if let Some(line) = story {
        f.render_widget(Paragraph::new(line), prefix_area);
    }
    f.render_widget(Paragraph::new(stored_lines(q, wide)), head);
    match app.explain() {
        Some(Load::Ready(x)) => {
            let mut names: Vec<String> = x.events.iter().filter_map(|e| e.node.clone()).collect();
            names.extend(x.events.iter().filter_map(|e| e.target.clone()));
            names.sort();
            names.dedup();
            let prefix = if names.len() > 1 {
                shared_prefix(&names)
            } else {
                0
            };
            let colors: HashMap<String, Color> = first_seen(&x.events)
                .into_iter()
                .enumerate()
                .map(|(i, n)| (n, PALETTE[i % PALETTE.len()]))
                .collect();
            f.render_widget(
                Paragraph::new(timeline_bar(x, &colors, bar.width as usize)),
                bar,
            );
            f.render_widget(
                Paragraph::new(Line::from(vec![
                    Span::styled("0 s (arrival)", dim()),
                    Span::styled(
                        format!(
                            "{:>w$}",
                            format!("{} s", fmt_secs(x.end_s)),
                            w = (axis.width as usize).saturating_sub(13)
                        ),
                        dim(),
                    ),
                ])),
                axis,
            );
            render_events(f, table_area, x, &colors, prefix, wide);
            f.render_widget(
                Paragraph::new(Span::styled(
                    x.note.clone(),
                    if x.matches_stored {
                        dim()
                    } else {
                        Style::default().fg(Color::Red)
                    },
                ))
                .wrap(Wrap { trim: true }),
                note_area,
            );
        }
        other => {
            let mut lines = vec![load_status(
                "Re-running its window to explain the decisions",
                other.as_ref(),
            )];
            if matches!(other, Some(Load::Failed(_))) {
                lines.push(Line::from(Span::styled(
                    "Only the stored outcome is shown above.",
                    dim(),
                )));
            }
            f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }), table_area);
        }
    }
}

fn stored_lines(q: &RequestRow, wide: bool) -> Vec<Line<'static>> {
    let outcome = match (q.completion_s, &q.dropped) {
        (Some(c), _) => Span::styled(
            format!(
                "done in {} s ({})",
                fmt_secs(c),
                if q.slo_met { "SLO met" } else { "SLO missed" }
            ),
            Style::default().fg(if q.slo_met {
                Color::Green
            } else {
                Color::Yellow
            }),
        ),
        (None, d) => Span::styled(
            format!("not finished ({})", d.as_deref().unwrap_or("dropped")),
            Style::default().fg(Color::Red),
        ),
    };
    let ttft = q
        .ttft_s
        .map_or("-".to_string(), |t| format!("{} s", fmt_secs(t)));
    if wide {
        vec![
            Line::from(format!(
                "workload id {} · {} prompt → {} output tokens · arrived {} s into the window",
                q.request_id,
                q.prompt_tokens,
                q.output_tokens,
                fmt_secs(q.arrival_s)
            )),
            Line::from(vec![
                Span::raw(format!("TTFT {ttft} · ")),
                outcome,
                Span::raw(format!(
                    " · {} interruption(s) · {} migration(s) · {} stint(s)",
                    q.interruptions, q.migrations, q.nodes_visited
                )),
            ]),
            Line::from(format!(
                "first node {} · final node {}",
                q.first_node.as_deref().unwrap_or("none"),
                q.final_node.as_deref().unwrap_or("none"),
            )),
        ]
    } else {
        vec![
            Line::from(format!(
                "id {} · {} → {} tokens · arrived at {} s",
                q.request_id,
                q.prompt_tokens,
                q.output_tokens,
                fmt_secs(q.arrival_s)
            )),
            Line::from(vec![Span::raw(format!("TTFT {ttft} · ")), outcome]),
            Line::from(format!(
                "{} interruption(s) · {} migration(s) · {} stint(s)",
                q.interruptions, q.migrations, q.nodes_visited
            )),
        ]
    }
}

fn first_seen(events: &[TimelineEvent]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in events {
        for n in [&e.node, &e.target].into_iter().flatten() {
            if !out.contains(n) {
                out.push(n.clone());
            }
        }
    }
    out
}

/// The request's life as one line: a coloured block per node it ran on, `─` while it waited,
/// `✗` where its node failed, `»` where it migrated.
fn timeline_bar(
    x: &RequestExplain,
    colors: &HashMap<String, Color>,
    width: usize,
) -> Line<'static> {
    if width == 0 {
        return Line::default();
    }
    let end = x.end_s.max(1e-9);
    let col = |t: f64| {
        ((t / end) * width as f64)
            .floor()
            .clamp(0.0, (width - 1) as f64) as usize
    };
    let mut cells: Vec<(String, Style)> = (0..width)
        .map(|c| {
            let t = (c as f64 + 0.5) / width as f64 * end;
            let state = x.events.iter().rev().filter(|e| e.at_s <= t).find(|e| {
                matches!(
                    e.kind,
                    EventKind::Place { .. }
                        | EventKind::Migrate
                        | EventKind::Fail
                        | EventKind::Wait
                )
            });
            match state {
                Some(e) if matches!(e.kind, EventKind::Place { .. } | EventKind::Migrate) => {
                    let node = if e.kind == EventKind::Migrate {
                        &e.target
                    } else {
                        &e.node
                    };
                    let color = node
                        .as_ref()
                        .and_then(|n| colors.get(n))
                        .copied()
                        .unwrap_or(Color::White);
                    ("█".to_string(), Style::default().fg(color))
                }
                _ => ("─".to_string(), dim()),
            }
        })
        .collect();
    for e in &x.events {
        match e.kind {
            EventKind::Fail => {
                cells[col(e.at_s)] = (
                    "✗".into(),
                    Style::default().fg(Color::Red).add_modifier(Modifier::BOLD),
                )
            }
            EventKind::Migrate => {
                cells[col(e.at_s)] = (
                    "»".into(),
                    Style::default()
                        .fg(Color::White)
                        .add_modifier(Modifier::BOLD),
                )
            }
            _ => {}
        }
    }
    Line::from(
        cells
            .into_iter()
            .map(|(s, st)| Span::styled(s, st))
            .collect::<Vec<_>>(),
    )
}

fn render_events(
    f: &mut Frame,
    area: Rect,
    x: &RequestExplain,
    colors: &HashMap<String, Color>,
    prefix: usize,
    wide: bool,
) {
    let node_cell = |n: &Option<String>| -> Cell<'static> {
        match n {
            Some(n) => Cell::from(Span::styled(
                truncate(short(n, prefix), if wide { 22 } else { 11 }),
                Style::default().fg(colors.get(n).copied().unwrap_or(Color::White)),
            )),
            None => Cell::from(""),
        }
    };
    let build = |with_candidates: bool| -> Vec<Row<'static>> {
        let mut rows: Vec<Row> = Vec::new();
        for e in &x.events {
            let at = Cell::from(format!("{:>6}", fmt_secs(e.at_s)));
            let num = |v: f64| Cell::from(format!("{:>6}", fmt_secs(v)));
            match &e.kind {
                EventKind::Arrive => rows.push(Row::new(vec![at, Cell::from("arrive")])),
                EventKind::Place { queued } => {
                    let what = if *queued { "queue on" } else { "place on" };
                    let mut cells = vec![
                        at,
                        Cell::from(what),
                        node_cell(&e.node),
                        num(e.t),
                        num(e.l),
                        num(e.e),
                    ];
                    if wide {
                        cells.push(Cell::from(format!(
                            "argmin E over {} feasible of {}",
                            e.considered.1, e.considered.0
                        )));
                    }
                    rows.push(Row::new(cells).style(Style::default().add_modifier(Modifier::BOLD)));
                    if !with_candidates {
                        continue;
                    }
                    let mut cands = e.candidates.clone();
                    cands.sort_by(|a, b| a.e.total_cmp(&b.e));
                    for c in cands {
                        let chosen = e.node.as_deref() == Some(c.node.as_str());
                        rows.push(
                            Row::new(vec![
                                Cell::from(""),
                                Cell::from(if chosen { "  ▶ cand" } else { "    cand" }),
                                node_cell(&Some(c.node.clone())),
                                num(c.t),
                                num(c.l),
                                num(c.e),
                            ])
                            .style(dim()),
                        );
                    }
                }
                EventKind::Wait => rows.push(Row::new(vec![at, Cell::from("no node: waits")])),
                EventKind::Fail => rows.push(
                    Row::new(vec![at, Cell::from("✗ node down"), node_cell(&e.node)])
                        .style(Style::default().fg(Color::Red)),
                ),
                EventKind::Stay { checks, reason } => {
                    let mut cells = vec![
                        at,
                        Cell::from(format!("check ×{checks}")),
                        node_cell(&e.target),
                        Cell::from(""),
                        Cell::from(""),
                        num(e.risk_gain),
                    ];
                    if wide {
                        cells.push(Cell::from(format!(
                            "{reason}: best gain {} s, dT {} s",
                            fmt_secs(e.risk_gain),
                            fmt_secs(e.dt)
                        )));
                    }
                    rows.push(Row::new(cells).style(dim()));
                }
                EventKind::Migrate => {
                    let mut cells = vec![
                        at,
                        Cell::from("» migrate to"),
                        node_cell(&e.target),
                        num(e.c_planned),
                        num(e.l),
                        num(e.risk_gain),
                    ];
                    if wide {
                        cells.push(Cell::from(format!(
                            "risk_gain {} > h {} and dT {} < h",
                            fmt_secs(e.risk_gain),
                            fmt_secs(e.h),
                            fmt_secs(e.dt)
                        )));
                    }
                    rows.push(Row::new(cells));
                }
                EventKind::FirstToken => {
                    rows.push(Row::new(vec![at, Cell::from("first token")]).style(dim()))
                }
                EventKind::Done => rows.push(
                    Row::new(vec![at, Cell::from("done"), node_cell(&e.node)])
                        .style(Style::default().fg(Color::Green)),
                ),
                EventKind::Dropped => rows.push(
                    Row::new(vec![at, Cell::from("window ended")])
                        .style(Style::default().fg(Color::Red)),
                ),
            }
        }
        rows
    };
    // Every candidate when there is room; otherwise the decisions only, and if even those do
    // not fit, the first ones, a gap and the outcome.
    let room = area.height.saturating_sub(1) as usize;
    let mut rows = build(true);
    if rows.len() > room {
        rows = build(false);
    }
    if rows.len() > room && room >= 3 {
        let hidden = rows.len() - (room - 1);
        let last = rows.pop();
        rows.truncate(room - 2);
        rows.push(Row::new(vec![
            Cell::from(""),
            Cell::from(Span::styled(format!("⋮ {hidden} more"), dim())),
        ]));
        rows.extend(last);
    }
    let mut widths = vec![
        Constraint::Length(6),
        Constraint::Length(12),
        Constraint::Length(if wide { 22 } else { 11 }),
        Constraint::Length(6),
        Constraint::Length(6),
        Constraint::Length(6),
    ];
    if wide {
        widths.push(Constraint::Min(10));
    }
    let mut header = vec![
        Cell::from("     s"),
        Cell::from("event"),
        Cell::from("node"),
        Cell::from("   T|C"),
        Cell::from("     L"),
        Cell::from("E|gain"),
    ];
    if wide {
        header.push(Cell::from("why"));
    }
    f.render_widget(
        Table::new(rows, widths).header(Row::new(header).style(header_style())),
        area,
    );
}

/// Screen 5: the requests of the selected policy and one request's timeline.
pub struct Request;

impl Component for Request {
    fn id(&self) -> Screen {
        Screen("request")
    }

    fn title(&self) -> &'static str {
        "Request"
    }

    fn list(&self) -> List {
        List::Requests
    }

    fn parent(&self) -> Option<Screen> {
        Some(Screen("replay"))
    }

    fn hints(&self, _app: &App) -> &'static str {
        "j/k request · / filter · s sort · h back · ? help · q quit"
    }

    fn help(&self) -> &'static [(&'static str, &'static str)] {
        &[("[  ]", "older / newer replay run")]
    }

    fn jobs(&self, app: &App) -> Vec<LoadJob> {
        let mut jobs = vec![app.replay_job()];
        jobs.extend(app.requests_job());
        jobs.extend(app.explain_job());
        jobs
    }

    fn render(&self, app: &App, f: &mut Frame, area: Rect) {
        render(app, f, area)
    }
}
