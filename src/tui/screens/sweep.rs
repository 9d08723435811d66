//! Screen 7: the regime map of a sweep. Every cell is coloured (and marked, for terminals
//! without colour) by the sign and significance of `hazard` minus the best hazard-blind
//! baseline, paired by window ([`crate::sweep::CellResult::vs_best_blind`]); the selected
//! cell's pairings are listed below the map, and Enter opens its policy comparison on the
//! Replay screen.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;

use crate::replay::{Metric, PairedDiff, Versus};
use crate::sweep::{CellResult, MAP_METRICS};
use crate::tui::app::{App, List, Load, Screen};
use crate::tui::component::Component;
use crate::tui::data::{LoadJob, SweepData};
use crate::tui::widgets::{block, dim, fmt_num, header_style, load_status, message, truncate};
use crossterm::event::KeyCode;

/// How a paired difference reads: hazard better, worse, or no difference the CI can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Negative with a CI that excludes 0.
    Better,
    /// Positive with a CI that excludes 0.
    Worse,
    /// The CI contains 0 (or there is no CI).
    NoDifference,
    /// The cell lacks the policies.
    Missing,
}

impl Reading {
    /// The reading of a difference `hazard - reference` (negative = hazard better).
    pub fn of(d: Option<PairedDiff>) -> Reading {
        match d.map(|d| d.direction()) {
            None => Reading::Missing,
            Some(Some(std::cmp::Ordering::Less)) => Reading::Better,
            Some(Some(_)) => Reading::Worse,
            Some(None) => Reading::NoDifference,
        }
    }

    /// The marker drawn before the number (so the map reads without colour too).
    pub fn marker(self) -> &'static str {
        match self {
            Reading::Better => "▼",
            Reading::Worse => "▲",
            Reading::NoDifference => "·",
            Reading::Missing => " ",
        }
    }

    fn style(self) -> Style {
        match self {
            Reading::Better => Style::default().fg(Color::Green),
            Reading::Worse => Style::default().fg(Color::Red),
            Reading::NoDifference => Style::default(),
            Reading::Missing => dim(),
        }
    }
}

/// The metric the map colours by.
pub(crate) fn map_metric(app: &App) -> Metric {
    MAP_METRICS[app.map_metric % MAP_METRICS.len()]
}

fn no_sweeps() -> Vec<Line<'static>> {
    vec![
        Line::from("No sweeps in this store yet."),
        Line::default(),
        Line::from("A sweep replays a grid of scenarios and maps where hazard-awareness pays:"),
        Line::from(Span::styled(
            "  hazardserve sweep --grid reports/sweeps/regime-map.toml",
            header_style(),
        )),
        Line::from("or run everything on the bundled samples (a small sweep included):"),
        Line::from(Span::styled("  hazardserve demo", header_style())),
        Line::default(),
        Line::from(Span::styled(
            "r reloads the store once a sweep has been stored.",
            dim(),
        )),
    ]
}

/// `diff [lo, hi]` of a pairing (`-` when absent).
fn diff_text(d: Option<PairedDiff>) -> String {
    match d {
        Some(d) => crate::output::interval_text(d.diff, d.ci_low.zip(d.ci_high)),
        None => "-".into(),
    }
}

fn pairing_line(label: String, v: Option<&Versus>, m: Metric, q: Option<f64>) -> Line<'static> {
    let d = v.and_then(|v| v.get(m));
    let r = Reading::of(d);
    Line::from(vec![
        Span::styled(format!("{label:<25}"), dim()),
        Span::styled(format!("{} ", r.marker()), r.style()),
        Span::styled(diff_text(d), r.style()),
        Span::styled(q.map_or(String::new(), |q| format!("  q {q:.3}")), dim()),
        Span::styled(
            v.map_or(String::new(), |v| format!("  (vs {})", v.reference)),
            dim(),
        ),
    ])
}

fn detail_lines(c: &CellResult, m: Metric) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::from(vec![
            Span::styled("cell ", dim()),
            Span::styled(c.key.clone(), header_style()),
        ]),
        pairing_line(
            "hazard − hazard-pooled (hazard)".into(),
            c.vs_pooled.as_ref(),
            m,
            c.q_value("hazard_vs_pooled", m),
        ),
        pairing_line(
            "hazard-pooled − fastest".into(),
            c.pairing("pooled_vs_fastest").as_deref(),
            m,
            c.q_value("pooled_vs_fastest", m),
        ),
        pairing_line(
            format!("fastest − {} (load)", c.reference),
            c.pairing("fastest_vs_reference").as_deref(),
            m,
            c.q_value("fastest_vs_reference", m),
        ),
        pairing_line(
            "hazard − uptime".into(),
            c.vs_uptime.as_ref(),
            m,
            c.q_value("hazard_vs_uptime", m),
        ),
        pairing_line(
            "planned migration effect".into(),
            c.migration_effect.as_ref(),
            m,
            c.q_value("migration_effect", m),
        ),
        pairing_line(
            "overlap on − off".into(),
            c.overlap_gain.as_ref(),
            m,
            c.q_value("overlap_gain", m),
        ),
    ];
    let verdict = format!(
        "hazard term: {} (hazard vs hazard-pooled) · load forecast: {} (fastest vs {}) · mean \
         completion, q < {}{}",
        c.hazard_term(),
        c.load_forecast(),
        c.reference,
        crate::sweep::FDR,
        if c.migration_pays() {
            "; pre-emptive migration pays"
        } else {
            ""
        }
    );
    lines.push(Line::from(vec![
        Span::styled("gap closed ", dim()),
        Span::raw(c.gap_closed_text(|g| fmt_num(Some(g)))),
        Span::styled(" · opportunity s/window ", dim()),
        Span::raw(fmt_num(c.opportunity_s())),
        Span::styled(" · planned migrations/window ", dim()),
        Span::raw(fmt_num(c.planned_migrations())),
    ]));
    lines.push(Line::from(vec![Span::styled(
        verdict,
        if c.pays() {
            Style::default().fg(Color::Green)
        } else {
            Style::default()
        },
    )]));
    lines
}

/// Draws the sweep screen.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let d: &SweepData = match app.sweep_load() {
        Some(Load::Ready(Some(d))) => d,
        Some(Load::Ready(None)) => {
            f.render_widget(message("Sweep", no_sweeps()), area);
            return;
        }
        other => {
            f.render_widget(
                message(
                    "Sweep",
                    vec![load_status("Loading the sweep", other.as_ref())],
                ),
                area,
            );
            return;
        }
    };
    let m = map_metric(app);
    let detail_h = if area.height >= 20 { 10 } else { 0 };
    let [info, map_area, legend, detail] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(4),
        Constraint::Length(1),
        Constraint::Length(detail_h),
    ])
    .areas(area);

    let pays = d.cells.iter().filter(|c| c.result.pays()).count();
    let pos = d.sweeps.iter().position(|s| *s == d.sweep_id).unwrap_or(0);
    f.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled(format!(" {}", d.sweep_id), header_style()),
            Span::raw(format!(
                " · the hazard term pays in {pays} of {} cells",
                d.cells.len()
            )),
            Span::styled(
                format!(" · sweep {}/{} ([ ] switch)", pos + 1, d.sweeps.len()),
                dim(),
            ),
        ])),
        info,
    );

    let rows = app.visible_map_rows(d);
    let selected = app.sel_cell.as_deref().and_then(|k| d.position(k));
    // Row labels: the values of the row axes; columns: the values of the column axis.
    let label_of = |r: usize| d.rows[r].join(" · ");
    let label_w = rows
        .iter()
        .map(|&r| label_of(r).chars().count())
        .chain(std::iter::once(d.row_axes().join(" · ").chars().count()))
        .max()
        .unwrap_or(8)
        .clamp(8, (map_area.width as usize * 45 / 100).max(8));
    let ncols = d.columns.len().max(1);
    // Inside the borders: the highlight symbol (2), the label, one space before each column.
    let col_w =
        ((map_area.width as usize).saturating_sub(label_w + 4 + ncols) / ncols).clamp(9, 24);
    // Two header lines: the column axis over its values; the row axes over the labels.
    let col_axis = d.column_axis().unwrap_or("");
    let header = Row::new(
        std::iter::once(Cell::from(vec![
            Line::from(""),
            Line::from(truncate(&d.row_axes().join(" · "), label_w)),
        ]))
        .chain(d.columns.iter().map(|c| {
            Cell::from(vec![
                Line::from(truncate(col_axis, col_w)),
                Line::from(truncate(c, col_w)),
            ])
        }))
        .collect::<Vec<_>>(),
    )
    .height(2)
    .style(header_style());
    let body: Vec<Row> = rows
        .iter()
        .map(|&r| {
            let mut cells = vec![Cell::from(truncate(&label_of(r), label_w))];
            for (c, slot) in d.grid[r].iter().enumerate() {
                let Some(i) = slot else {
                    cells.push(Cell::from(Span::styled("", dim())));
                    continue;
                };
                let res = &d.cells[*i].result;
                let diff = res.vs_pooled.as_ref().and_then(|v| v.get(m));
                let reading = Reading::of(diff);
                let star = if res.pays() { "★" } else { "" };
                let text = format!(
                    "{} {}{star}",
                    reading.marker(),
                    diff.map_or("n/a".into(), |x| fmt_num(Some(x.diff)))
                );
                let mut style = reading.style();
                if selected == Some((r, c)) {
                    style = style.add_modifier(Modifier::REVERSED | Modifier::BOLD);
                }
                cells.push(Cell::from(Span::styled(truncate(&text, col_w), style)));
            }
            Row::new(cells)
        })
        .collect();
    let widths: Vec<Constraint> = std::iter::once(Constraint::Length(label_w as u16))
        .chain((0..ncols).map(|_| Constraint::Length(col_w as u16)))
        .collect();
    let hidden = d.rows.len() - rows.len();
    let title = format!(
        " hazard term: hazard − hazard-pooled · {} · {} rows{} ",
        m.key(),
        rows.len(),
        if hidden > 0 {
            format!(" ({hidden} filtered out)")
        } else {
            String::new()
        }
    );
    let sel_row = selected.and_then(|(r, _)| rows.iter().position(|&x| x == r));
    let table = Table::new(body, widths)
        .header(header)
        .block(block(title))
        .highlight_symbol("▶ ");
    let mut state = TableState::default().with_selected(sel_row);
    f.render_stateful_widget(table, map_area, &mut state);

    f.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled(" ▼ hazard better", Reading::Better.style()),
            Span::raw("  "),
            Span::styled("▲ worse", Reading::Worse.style()),
            Span::raw("  · no difference (95% CI)  ★ the hazard term pays"),
        ])),
        legend,
    );

    if detail_h > 0 {
        let lines = match app.sel_cell.as_deref().and_then(|k| d.cell(k)) {
            Some(c) => detail_lines(&c.result, m),
            None => vec![Line::from(Span::styled("no cell selected", dim()))],
        };
        f.render_widget(
            Paragraph::new(lines).block(block(format!(
                " Selected cell · {} (negative: hazard better) ",
                m.key()
            ))),
            detail,
        );
    }
}

/// Screen 7: the regime map of a stored sweep.
pub struct Sweep;

impl Component for Sweep {
    fn id(&self) -> Screen {
        Screen("sweep")
    }

    fn title(&self) -> &'static str {
        "Sweep"
    }

    fn list(&self) -> List {
        List::Cells
    }

    fn hints(&self, _app: &App) -> &'static str {
        "arrows/hjkl move · Enter compare · m metric · [ ] sweep · r reload · q quit"
    }

    fn help(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("h j k l", "move across and down the map (arrows too)"),
            ("Enter", "the cell's policy comparison (Replay screen)"),
            ("m", "colour by the next metric (mean, p99, interruptions)"),
            ("[  ]", "older / newer sweep"),
        ]
    }

    fn jobs(&self, app: &App) -> Vec<LoadJob> {
        vec![app.sweep_job()]
    }

    fn key(&self, app: &mut App, code: KeyCode) -> bool {
        sweep_key(app, code)
    }

    fn render(&self, app: &App, f: &mut Frame, area: Rect) {
        render(app, f, area)
    }
}

/// Keys of the Sweep screen: moves over the map, opens a cell, switches the metric or the
/// sweep. Returns false for keys it leaves to the common bindings.
fn sweep_key(app: &mut App, code: KeyCode) -> bool {
    match code {
        KeyCode::Char('j') | KeyCode::Down => move_cell(app, 1, 0),
        KeyCode::Char('k') | KeyCode::Up => move_cell(app, -1, 0),
        KeyCode::PageDown => move_cell(app, 10, 0),
        KeyCode::PageUp => move_cell(app, -10, 0),
        KeyCode::Char('g') | KeyCode::Home => move_cell(app, isize::MIN / 2, 0),
        KeyCode::Char('G') | KeyCode::End => move_cell(app, isize::MAX / 2, 0),
        KeyCode::Char('l') | KeyCode::Right => move_cell(app, 0, 1),
        KeyCode::Char('h') | KeyCode::Left => move_cell(app, 0, -1),
        KeyCode::Enter => match (
            app.sel_cell.clone(),
            app.sweep_data().map(|d| d.sweep_id.clone()),
        ) {
            (Some(key), Some(sweep)) => {
                // Pinned, so that a reload that brings a newer sweep keeps this cell.
                app.sweep = Some(sweep);
                app.notice = Some(format!("cell {key}"));
                app.cell = Some(key);
                app.sel_policy = None;
                app.screen = Screen("replay");
            }
            _ => app.notice = Some("no cell to open".into()),
        },
        KeyCode::Char('m') => {
            app.map_metric = (app.map_metric + 1) % MAP_METRICS.len();
            app.notice = Some(format!(
                "colouring by {}",
                MAP_METRICS[app.map_metric].key()
            ));
        }
        KeyCode::Char('[') => switch_sweep(app, 1),
        KeyCode::Char(']') => switch_sweep(app, -1),
        _ => return false,
    }
    true
}

/// Moves the map selection by rows and columns (clamped; empty slots are skipped over).
fn move_cell(app: &mut App, drow: isize, dcol: isize) {
    let Some(d) = app.sweep_data().cloned() else {
        return;
    };
    let rows = app.visible_map_rows(&d);
    if rows.is_empty() {
        return;
    }
    let (r0, c0) = app
        .sel_cell
        .as_deref()
        .and_then(|k| d.position(k))
        .and_then(|(r, c)| Some((rows.iter().position(|&x| x == r)?, c)))
        .unwrap_or((0, 0));
    let last_row = rows.len() as isize - 1;
    let last_col = d.columns.len() as isize - 1;
    let mut r = (r0 as isize).saturating_add(drow).clamp(0, last_row);
    let mut c = (c0 as isize).saturating_add(dcol).clamp(0, last_col);
    // Step on past empty slots in the direction of travel.
    loop {
        if let Some(i) = d.grid[rows[r as usize]][c as usize] {
            app.sel_cell = Some(d.cells[i].result.key.clone());
            return;
        }
        let (nr, nc) = (r + drow.signum(), c + dcol.signum());
        if (drow == 0 && dcol == 0) || nr < 0 || nr > last_row || nc < 0 || nc > last_col {
            return;
        }
        (r, c) = (nr, nc);
    }
}

/// Shows the sweep `delta` places further in the store's sweep list (newest first).
fn switch_sweep(app: &mut App, delta: isize) {
    let Some(d) = app.sweep_data() else {
        app.notice = Some("no sweep loaded".into());
        return;
    };
    let sweeps = d.sweeps.clone();
    let cur = d.sweep_id.clone();
    let pos = sweeps.iter().position(|x| *x == cur).unwrap_or(0) as isize;
    let new = (pos + delta).clamp(0, sweeps.len() as isize - 1) as usize;
    match sweeps.get(new) {
        Some(id) if *id != cur => {
            app.sweep = Some(id.clone());
            app.sel_cell = None;
            app.cell = None;
            app.notice = Some(format!("sweep {id}"));
        }
        _ => {
            app.notice = Some(if sweeps.len() <= 1 {
                "this store has one sweep".into()
            } else {
                "no more sweeps that way".into()
            })
        }
    }
}
