//! Screen 4: the policy comparison of a replay run, the completion-time CDF of every policy and
//! the fraction of the fastest-to-oracle gap each one closes.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Cell, Chart, Dataset, GraphType, Paragraph, Row, Table, TableState};
use ratatui::Frame;

use crate::tui::app::{App, List, Screen};
use crate::tui::component::Component;
use crate::tui::data::{LoadJob, Metric};
use crate::tui::widgets::{
    axis_labels, block, dim, fmt_ci, fmt_num, header_style, message, nice_max, replay_or_message,
    selected_style, SignedBar, SignedBars, PALETTE,
};
use crossterm::event::KeyCode;

/// The colour of the `i`-th policy of a run (stored order).
fn policy_color(i: usize) -> ratatui::style::Color {
    PALETTE[i % PALETTE.len()]
}

/// The glyph of the `i`-th policy: its CDF is drawn with it and the table shows it before the
/// name, so curves are told apart without colour too.
fn policy_mark(i: usize) -> (Marker, char) {
    const MARKS: [char; 9] = ['•', '*', '+', 'x', 'o', '#', '~', '=', '%'];
    let c = MARKS[i % MARKS.len()];
    (Marker::Custom(c), c)
}

/// One CDF on the chart: policy index, selected, points.
type Series = (usize, bool, Vec<(f64, f64)>);

fn cell(m: &Metric) -> String {
    fmt_ci(m.value, m.ci)
}

/// Draws the replay screen.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let Some(r) = replay_or_message(app, f, area, "Replay") else {
        return;
    };
    let rows = app.visible_policies(r);
    // Prefix caching: the hit rate (and, wide, the state node ends destroyed per window).
    let cached = rows.iter().any(|p| p.hit_rate.value.is_some());
    let wide = area.width >= if cached { 175 } else { 150 };
    let table_h = (rows.len() as u16 + 3)
        .min(area.height.saturating_sub(8))
        .max(4);
    // A priced fleet gets a cost line: dollars per window by pool, and the goodput per dollar
    // of the selected policy (else the first).
    let priced = r.rows.iter().find(|p| !p.dollars_by_pool.is_empty());
    let [info, cost_area, table_area, bottom] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(u16::from(priced.is_some())),
        Constraint::Length(table_h),
        Constraint::Min(4),
    ])
    .areas(area);
    if let Some(p) = priced {
        let shown = app
            .sel_policy
            .as_deref()
            .and_then(|name| r.rows.iter().find(|x| x.name == name))
            .unwrap_or(p);
        let pools: Vec<String> = p
            .dollars_by_pool
            .iter()
            .map(|(name, d)| format!("{name} ${}", fmt_num(Some(*d))))
            .collect();
        f.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled(" cost per window ", dim()),
                Span::raw(format!(
                    "${} = {}",
                    fmt_num(p.dollars.value),
                    pools.join(" + ")
                )),
                Span::styled(format!(" · {} goodput/$ ", shown.name), dim()),
                Span::raw(cell(&shown.goodput_per_dollar)),
            ])),
            cost_area,
        );
    }

    let seeds = r.run.seeds.trim_matches(|c| c == '[' || c == ']');
    let pos = r.runs.iter().position(|x| *x == r.run.run_id).unwrap_or(0);
    if let Some(origin) = &r.cell {
        f.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled(format!(" {}", origin.sweep_id), header_style()),
                Span::styled(" cell ", dim()),
                Span::raw(format!(
                    "{} · {} on {} · {} windows",
                    origin.key, r.run.workload_source, r.run.nodes_source, r.run.windows,
                )),
            ])),
            info,
        );
    } else {
        f.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled(format!(" {}", r.run.run_id), header_style()),
                Span::raw(format!(
                    " · {} on {} · {} windows × seeds {}",
                    r.run.workload_source, r.run.nodes_source, r.run.windows, seeds,
                )),
                Span::styled(
                    if wide {
                        format!(
                            " · priors fitted before {} · run {} of {} ([ ] switch)",
                            fmt_num(Some(r.run.cutoff_s)),
                            pos + 1,
                            r.runs.len()
                        )
                    } else {
                        format!(" · run {}/{}", pos + 1, r.runs.len())
                    },
                    dim(),
                ),
            ])),
            info,
        );
    }

    let index_of = |name: &str| r.rows.iter().position(|p| p.name == name).unwrap_or(0);
    let mut header = vec!["policy", "mean completion s"];
    if wide {
        header.extend([
            "p50 s",
            "p99 s",
            "TTFT s",
            "SLO attainment",
            "unfin",
            "tok/s",
            "intr",
            "migr",
            "gap closed",
            "T/served",
            "Brier",
        ]);
    } else {
        header.extend(["p99 s", "SLO", "unfin", "intr", "migr", "gap"]);
    }
    let pct = |m: &Metric| {
        m.value
            .map_or("-".to_string(), |v| format!("{:.1}%", 100.0 * v))
    };
    if cached {
        header.extend(if wide {
            &["prefix hit", "destroyed/w"][..]
        } else {
            &["hit"][..]
        });
    }
    let body: Vec<Row> = rows
        .iter()
        .map(|p| {
            let color = policy_color(index_of(&p.name));
            let mut cells = vec![
                Cell::from(Line::from(vec![
                    Span::styled(
                        format!("{} ", policy_mark(index_of(&p.name)).1),
                        Style::default().fg(color),
                    ),
                    Span::raw(p.name.clone()),
                ])),
                Cell::from(cell(&p.mean)),
            ];
            if wide {
                cells.extend([
                    Cell::from(format!("{:>6}", fmt_num(p.p50.value))),
                    Cell::from(cell(&p.p99)),
                    Cell::from(format!("{:>7}", fmt_num(p.ttft_p50.value))),
                    Cell::from(cell(&p.slo)),
                    Cell::from(format!("{:>5}", fmt_num(p.unfinished.value))),
                    Cell::from(format!("{:>7}", fmt_num(p.goodput.value))),
                    Cell::from(format!("{:>5}", fmt_num(p.interruptions.value))),
                    Cell::from(format!("{:>4}", fmt_num(p.migrations.value))),
                    Cell::from(cell(&p.gap_closed)),
                    Cell::from(format!(
                        "{:>8}",
                        p.t_ratio.map_or("-".into(), |v| format!("{v:.3}"))
                    )),
                    Cell::from(format!(
                        "{:>6}",
                        p.brier.map_or("-".into(), |v| format!("{v:.3}"))
                    )),
                ]);
            } else {
                cells.extend([
                    Cell::from(fmt_num(p.p99.value)),
                    Cell::from(format!("{:>5}", pct(&p.slo))),
                    Cell::from(format!("{:>5}", fmt_num(p.unfinished.value))),
                    Cell::from(format!("{:>5}", fmt_num(p.interruptions.value))),
                    Cell::from(format!("{:>4}", fmt_num(p.migrations.value))),
                    Cell::from(fmt_num(p.gap_closed.value)),
                ]);
            }
            if cached {
                cells.push(Cell::from(format!("{:>6}", pct(&p.hit_rate))));
                if wide {
                    cells.push(Cell::from(format!("{:>11}", fmt_num(p.destroyed.value))));
                }
            }
            Row::new(cells)
        })
        .collect();
    let mut widths: Vec<Constraint> = if wide {
        vec![
            Constraint::Length(18),
            Constraint::Length(21),
            Constraint::Length(6),
            Constraint::Length(21),
            Constraint::Length(7),
            Constraint::Length(23),
            Constraint::Length(5),
            Constraint::Length(7),
            Constraint::Length(5),
            Constraint::Length(4),
            Constraint::Length(21),
            Constraint::Length(8),
            Constraint::Min(6),
        ]
    } else {
        vec![
            Constraint::Length(18),
            Constraint::Length(20),
            Constraint::Length(6),
            Constraint::Length(5),
            Constraint::Length(5),
            Constraint::Length(5),
            Constraint::Length(4),
            Constraint::Min(6),
        ]
    };
    if cached {
        widths.pop();
        widths.push(Constraint::Length(6));
        if wide {
            widths.extend([Constraint::Length(10), Constraint::Min(11)]);
        } else {
            widths.push(Constraint::Min(6));
        }
    }
    let sort = app.sort(List::Policies);
    let title = format!(
        " Policies ({}) · 95% CIs over windows · by {} {} ",
        rows.len(),
        List::Policies
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
    let mut state = TableState::default().with_selected(app.selected_index(List::Policies));
    f.render_stateful_widget(table, table_area, &mut state);

    // Completion-time CDFs and the oracle gap.
    let [cdf_area, gap_area] =
        Layout::horizontal([Constraint::Percentage(58), Constraint::Percentage(42)]).areas(bottom);
    let xmax = nice_max(
        r.rows
            .iter()
            .filter_map(|p| p.p99.value)
            .fold(0.0, f64::max),
    );
    let selected = app.sel_policy.as_deref();
    let clipped: Vec<Series> = r
        .rows
        .iter()
        .enumerate()
        .filter(|(_, p)| rows.iter().any(|v| v.name == p.name))
        .map(|(i, p)| {
            let mut pts: Vec<(f64, f64)> =
                p.cdf.iter().copied().filter(|&(x, _)| x <= xmax).collect();
            if let Some(&(_, y)) = pts.last() {
                if pts.len() < p.cdf.len() {
                    pts.push((xmax, y));
                }
            }
            (i, selected == Some(p.name.as_str()), pts)
        })
        .collect();
    // The selected policy last, so it is drawn on top.
    let mut order: Vec<&Series> = clipped.iter().collect();
    order.sort_by_key(|(_, sel, _)| *sel);
    let datasets: Vec<Dataset> = order
        .iter()
        .map(|(i, sel, pts)| {
            let mut style = Style::default().fg(policy_color(*i));
            if *sel {
                style = style.add_modifier(Modifier::BOLD);
            }
            Dataset::default()
                .marker(policy_mark(*i).0)
                .graph_type(GraphType::Line)
                .style(style)
                .data(pts)
        })
        .collect();
    let chart = Chart::new(datasets)
        .block(block(" Completion time CDF (s) "))
        .legend_position(None)
        .x_axis(
            Axis::default()
                .bounds([0.0, xmax])
                .labels(axis_labels(0.0, xmax, 3, |x| fmt_num(Some(x)))),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, 1.0])
                .labels(axis_labels(0.0, 1.0, 3, |y| format!("{y:.1}"))),
        );
    if r.rows.iter().all(|p| p.cdf.is_empty()) {
        f.render_widget(
            message(
                "Completion time CDF",
                vec![Line::from(Span::styled(
                    "A sweep cell keeps its comparison, not its requests: replay the cell's scenario for the CDF.",
                    dim(),
                ))],
            ),
            cdf_area,
        );
    } else {
        f.render_widget(chart, cdf_area);
    }

    let bars: Vec<SignedBar> = rows
        .iter()
        .map(|p| SignedBar {
            label: p.name.clone(),
            value: p.gap_closed.value,
            ci: p.gap_closed.ci,
            color: policy_color(index_of(&p.name)),
            selected: selected == Some(p.name.as_str()),
        })
        .collect();
    let lo = bars
        .iter()
        .filter_map(|b| b.ci.map(|c| c.0).or(b.value))
        .fold(-1.0f64, f64::min)
        .max(-3.0);
    let hi = bars
        .iter()
        .filter_map(|b| b.ci.map(|c| c.1).or(b.value))
        .fold(1.0f64, f64::max)
        .min(3.0);
    let gap_block = block(if gap_area.width >= 44 {
        " Oracle gap closed (0 fastest, 1 oracle) "
    } else {
        " Oracle gap closed "
    });
    let inner = gap_block.inner(gap_area);
    f.render_widget(gap_block, gap_area);
    f.render_widget(
        SignedBars {
            bars,
            min: lo,
            max: hi,
        },
        inner,
    );
}

/// Screen 4: the policy comparison of a replay run (or of a sweep cell opened on the map).
pub struct Replay;

impl Component for Replay {
    fn id(&self) -> Screen {
        Screen("replay")
    }

    fn title(&self) -> &'static str {
        "Replay"
    }

    fn list(&self) -> List {
        List::Policies
    }

    fn child(&self) -> Option<Screen> {
        Some(Screen("request"))
    }

    fn parent(&self) -> Option<Screen> {
        Some(Screen::HOME)
    }

    fn hints(&self, app: &App) -> &'static str {
        if app.cell.is_some() {
            "j/k policy · h back to the map · [ ] stored runs · ? help · q quit"
        } else {
            "j/k policy · Enter requests · [ ] run · s sort · ? help · q quit"
        }
    }

    fn help(&self) -> &'static [(&'static str, &'static str)] {
        &[("[  ]", "older / newer replay run")]
    }

    fn jobs(&self, app: &App) -> Vec<LoadJob> {
        vec![app.replay_job()]
    }

    /// With a sweep cell open, `h` goes back to the map.
    fn key(&self, app: &mut App, code: KeyCode) -> bool {
        let back = matches!(
            code,
            KeyCode::Char('h') | KeyCode::Left | KeyCode::Backspace
        );
        if back && app.cell.is_some() {
            app.screen = Screen("sweep");
            return true;
        }
        false
    }

    /// A sweep cell keeps no requests: Enter explains instead of opening them.
    fn enter(&self, app: &mut App) -> bool {
        if app.cell.is_none() {
            return false;
        }
        app.notice = Some(
            "a sweep cell keeps no requests: replay its scenario (`hazardserve replay --config`) to see them"
                .into(),
        );
        true
    }

    fn render(&self, app: &App, f: &mut Frame, area: Rect) {
        render(app, f, area)
    }
}
