//! Screen 1: every source with its counts, censoring, span and hazard-shape verdict.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState, Wrap};
use ratatui::Frame;

use crate::tui::app::{App, List, Load, Screen};
use crate::tui::component::Component;
use crate::tui::data::{SourceRow, StoreState};
use crate::tui::widgets::{
    block, dim, fmt_dur, fmt_dur_opt, fmt_instant, fmt_num, fmt_pct, header_style, load_status,
    message, selected_style, truncate,
};

/// What the store needs before there is anything to look at.
fn next_steps(state: StoreState, store: &str) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    match state {
        StoreState::Missing => {
            lines.push(Line::from(format!("There is no store at {store}.")));
        }
        _ => lines.push(Line::from("The store has no sources yet.")),
    }
    lines.push(Line::default());
    lines.push(Line::from(
        "Load the bundled samples, fit them and replay every policy:",
    ));
    lines.push(Line::from(Span::styled(
        "  hazardserve demo",
        header_style(),
    )));
    lines.push(Line::from("or ingest a trace of your own:"));
    lines.push(Line::from(Span::styled(
        "  hazardserve ingest --format tick-json --source NAME PATH",
        header_style(),
    )));
    lines.push(Line::default());
    lines.push(Line::from(Span::styled(
        "(pass --store DIR to open another store) · q quits",
        dim(),
    )));
    lines
}

fn verdict_cell(app: &App, r: &SourceRow, wide: bool) -> Cell<'static> {
    if r.nodes == 0 {
        return Cell::from(Span::styled(
            if r.is_workload() { "workload" } else { "-" },
            dim(),
        ));
    }
    match app.verdict(&r.source) {
        Some(Load::Ready(v)) => {
            let color = match v.verdict.as_str() {
                "decreasing" => Color::Green,
                "increasing" | "capped" => Color::Red,
                "bathtub" => Color::Magenta,
                "constant" => Color::Yellow,
                _ => Color::DarkGray,
            };
            let text = match (wide, v.shape) {
                (true, Some(k)) => format!("k={k:.2} {}", v.verdict),
                _ => v.verdict.clone(),
            };
            Cell::from(Span::styled(text, Style::default().fg(color)))
        }
        Some(Load::Failed(_)) => {
            Cell::from(Span::styled("fit failed", Style::default().fg(Color::Red)))
        }
        _ => Cell::from(Span::styled("fitting…", dim())),
    }
}

/// Draws the sources screen.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let ov = match app.load_of(&crate::tui::data::LoadJob::Overview, |l| match l {
        crate::tui::data::Loaded::Overview(o) => Some(o),
        _ => None,
    }) {
        Some(Load::Ready(o)) => o,
        other => {
            f.render_widget(
                message(
                    "Sources",
                    vec![load_status("Reading the store", other.as_ref())],
                ),
                area,
            );
            return;
        }
    };
    if ov.state != StoreState::Ready {
        f.render_widget(message("Sources", next_steps(ov.state, &ov.store)), area);
        return;
    }
    let rows = app.visible_sources();
    let wide = area.width >= 120;
    // The table as tall as its rows (at least 5 lines), the detail below gets the rest.
    let table_h = (rows.len() as u16 + 3)
        .max(5)
        .min(area.height.saturating_sub(7));
    let [top, bottom] =
        Layout::vertical([Constraint::Length(table_h), Constraint::Min(7)]).areas(area);

    let mut header = vec!["source"];
    if wide {
        header.extend(["adapter", "kind"]);
    }
    header.extend(["nodes", "sessions", "cens", "trunc", "span", "hazard"]);
    let mut widths = vec![Constraint::Min(12)];
    if wide {
        widths.extend([Constraint::Length(16), Constraint::Length(16)]);
    }
    widths.extend([
        Constraint::Length(6),
        Constraint::Length(8),
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Length(8),
        Constraint::Length(if wide { 26 } else { 16 }),
    ]);
    let body: Vec<Row> = rows
        .iter()
        .map(|r| {
            let mut cells = vec![Cell::from(r.source.clone())];
            if wide {
                cells.push(Cell::from(r.adapter.clone()));
                cells.push(Cell::from(r.kind.clone()));
            }
            let na = r.nodes == 0;
            cells.extend([
                Cell::from(format!("{:>6}", r.nodes)),
                Cell::from(format!("{:>8}", if na { r.requests } else { r.sessions })),
                Cell::from(format!(
                    "{:>5}",
                    if na {
                        "-".into()
                    } else {
                        fmt_pct(r.censored_share())
                    }
                )),
                Cell::from(format!(
                    "{:>5}",
                    if na {
                        "-".into()
                    } else {
                        fmt_pct(r.truncated_share())
                    }
                )),
                Cell::from(format!("{:>8}", fmt_dur(r.span_s()))),
                verdict_cell(app, r, wide),
            ]);
            Row::new(cells)
        })
        .collect();
    let sort = app.sort(List::Sources);
    let title = format!(
        " Sources ({}) · sorted by {} {} ",
        rows.len(),
        List::Sources
            .sort_columns()
            .get(sort.column)
            .copied()
            .unwrap_or(""),
        if sort.descending { "↓" } else { "↑" }
    );
    let table = Table::new(body, widths)
        .header(Row::new(header).style(header_style()))
        .block(block(title))
        .row_highlight_style(selected_style())
        .highlight_symbol("▶ ");
    let mut state = TableState::default().with_selected(app.selected_index(List::Sources));
    f.render_stateful_widget(table, top, &mut state);

    // Detail of the selected source.
    let mut lines: Vec<Line> = Vec::new();
    if let Some(r) = app.selected_source_row() {
        lines.push(Line::from(vec![
            Span::styled(r.source.clone(), header_style()),
            Span::raw(format!(
                " · adapter {} · kind {} · {} clock",
                r.adapter, r.kind, r.time_base
            )),
        ]));
        lines.push(Line::from(format!(
            "observed {} → {} ({})",
            fmt_instant(r.observation_start, &r.time_base),
            fmt_instant(r.observation_end, &r.time_base),
            fmt_dur(r.span_s())
        )));
        if r.is_workload() {
            lines.push(Line::from(format!(
                "{} requests · {} rejected records",
                r.requests, r.rejects
            )));
            lines.push(Line::from(Span::styled(
                "A request workload: Enter opens the replay runs.",
                dim(),
            )));
        } else {
            lines.push(Line::from(format!(
                "{} nodes · {} sessions: {} failures, {} censored, {} left-truncated · {} rejected",
                r.nodes, r.sessions, r.events, r.censored, r.left_truncated, r.rejects
            )));
            match app.verdict(&r.source) {
                Some(Load::Ready(v)) => {
                    let ci = v
                        .shape_ci
                        .map_or(String::new(), |(lo, hi)| format!(" [{lo:.2}, {hi:.2}]"));
                    lines.push(Line::from(format!(
                        "Weibull k = {}{}, scale {}, LR p = {}: {} hazard · pooled median {}",
                        v.shape.map_or("-".into(), |k| format!("{k:.2}")),
                        ci,
                        fmt_dur_opt(v.scale_s),
                        fmt_num(v.p_value),
                        v.verdict,
                        fmt_dur_opt(v.median_s)
                    )));
                }
                Some(Load::Failed(e)) => lines.push(Line::from(Span::styled(
                    format!("fit failed: {e}"),
                    Style::default().fg(Color::Red),
                ))),
                _ => lines.push(Line::from(Span::styled("fitting the hazard shape…", dim()))),
            }
            lines.push(Line::from(Span::styled(
                "Enter: its nodes · 3: survival · 6: migration trigger",
                dim(),
            )));
        }
    } else if rows.is_empty() {
        lines.push(Line::from(format!(
            "No source matches the filter /{} (Esc clears it).",
            truncate(app.filter(List::Sources), 30)
        )));
    }
    f.render_widget(
        Paragraph::new(lines)
            .block(block(" Source "))
            .wrap(Wrap { trim: true }),
        bottom,
    );
}

/// Screen 1: every source of the store.
pub struct Sources;

impl Component for Sources {
    fn id(&self) -> Screen {
        Screen::HOME
    }

    fn title(&self) -> &'static str {
        "Sources"
    }

    fn list(&self) -> List {
        List::Sources
    }

    fn child(&self) -> Option<Screen> {
        Some(Screen("nodes"))
    }

    fn hints(&self, _app: &App) -> &'static str {
        "j/k move · Enter nodes · / filter · s sort · ? help · q quit"
    }

    /// A source without nodes (a request workload) opens its replays instead of its nodes.
    fn enter(&self, app: &mut App) -> bool {
        let workload = app
            .selected_source_row()
            .filter(|r| r.nodes == 0)
            .map(|r| (r.source.clone(), r.is_workload()));
        let Some((name, is_workload)) = workload else {
            return false;
        };
        app.screen = Screen("replay");
        if is_workload {
            app.notice = Some(format!("{name} is a request workload: its replays"));
        }
        true
    }

    fn render(&self, app: &App, f: &mut Frame, area: Rect) {
        render(app, f, area)
    }
}
