//! Screen 6: the pre-emptive migration trigger of a two-node hop, `risk_gain` against the
//! source node's uptime, for the selected node (source) and a destination picked here, on the
//! hop of `hazardserve trigger` ([`crate::policy::analysis::TriggerSettings::DEFAULT`]) with the
//! nodes' shrunk survival curves and a context size chosen with `+`/`-`.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Axis, Cell, Chart, Dataset, GraphType, Paragraph, Row, Table, TableState, Wrap,
};
use ratatui::Frame;

use crate::tui::app::{App, List, Load, Screen};
use crate::tui::component::Component;
use crate::tui::data::{LoadJob, POOLED, TRIGGER_CONTEXTS};
use crate::tui::widgets::{
    axis_labels, block, dim, fmt_dur, fmt_dur_opt, fmt_secs, header_style, load_status,
    selected_style, source_or_message, truncate,
};
use crossterm::event::KeyCode;

const GAIN_COLOR: Color = Color::Green;
const DT_COLOR: Color = Color::Yellow;
const H_COLOR: Color = Color::Red;
const AGE_COLOR: Color = Color::Magenta;

/// Draws the trigger screen.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let Some(d) = source_or_message(app, f, area, "Trigger") else {
        return;
    };
    let wide = area.width >= 120;
    let [left, right] = Layout::horizontal([
        Constraint::Length(if wide { 32 } else { 20 }),
        Constraint::Min(30),
    ])
    .areas(area);

    // Destinations.
    let dests = app.visible_dests(d);
    let rows: Vec<Row> = dests
        .iter()
        .map(|id| {
            let label = if id == POOLED {
                POOLED.to_string()
            } else {
                d.short_id(id).to_string()
            };
            Row::new(vec![Cell::from(truncate(
                &label,
                left.width.saturating_sub(4) as usize,
            ))])
        })
        .collect();
    let table = Table::new(rows, [Constraint::Min(4)])
        .block(block(" Destination "))
        .row_highlight_style(selected_style())
        .highlight_symbol("▶ ");
    let mut state = TableState::default().with_selected(app.selected_index(List::Destinations));
    f.render_stateful_widget(table, left, &mut state);

    let Some(key) = app.trigger_key() else {
        return;
    };
    let from_label = if key.from == POOLED {
        POOLED.to_string()
    } else {
        d.short_id(&key.from).to_string()
    };
    let to_label = if key.to == POOLED {
        POOLED.to_string()
    } else {
        d.short_id(&key.to).to_string()
    };
    let src_age = d.node(&key.from).and_then(|n| n.current_age_s);
    let outer = block(format!(
        " Trigger · {from_label} → {to_label} · {} tokens ",
        key.context
    ));
    let inner = outer.inner(right);
    f.render_widget(outer, right);
    let table_h = if inner.height >= 36 { 14 } else { 8 };
    let [info, chart_area, legend, table_area] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Min(6),
        Constraint::Length(1),
        Constraint::Length(table_h),
    ])
    .areas(inner);

    let t = match app.trigger() {
        Some(Load::Ready(t)) => t,
        other => {
            f.render_widget(
                Paragraph::new(load_status("Pricing the hop", other.as_ref())),
                chart_area,
            );
            return;
        }
    };
    f.render_widget(
        Paragraph::new(if wide {
            vec![
                Line::from(format!(
                    "source {from_label} (up {} at the end) → destination {to_label} (up {})",
                    fmt_dur_opt(src_age),
                    fmt_dur(t.dest_age_s)
                )),
                Line::from(Span::styled(
                    format!(
                        "context {} tokens (+/-), {} more expected · WAN 100 Mb/s, Llama-3-8B KV, 250 tok/s prefill, 20 tok/s decode",
                        key.context, t.remaining
                    ),
                    dim(),
                )),
            ]
        } else {
            vec![
                Line::from(format!(
                    "from {} (up {}) to {} (up {})",
                    truncate(&from_label, 18),
                    fmt_dur_opt(src_age),
                    truncate(&to_label, 18),
                    fmt_dur(t.dest_age_s)
                )),
                Line::from(Span::styled(
                    format!(
                        "{} tok (+/-), {} to go · WAN 100 Mb/s · Llama-3-8B",
                        key.context, t.remaining
                    ),
                    dim(),
                )),
            ]
        })
        .wrap(Wrap { trim: true }),
        info,
    );

    // risk_gain and dT against log10(uptime).
    let xmax = t.curve.last().map_or(5.4, |p| p.0.max(1.0).log10());
    let gain: Vec<(f64, f64)> = t
        .curve
        .iter()
        .filter(|p| p.1.is_finite())
        .map(|p| (p.0.max(1.0).log10(), p.1))
        .collect();
    let dt: Vec<(f64, f64)> = t
        .curve
        .iter()
        .filter(|p| p.2.is_finite())
        .map(|p| (p.0.max(1.0).log10(), p.2))
        .collect();
    let values = gain.iter().chain(dt.iter()).map(|p| p.1);
    let ymin = values.clone().fold(-t.h, f64::min).max(-1e6);
    let ymax = values.fold(2.0 * t.h, f64::max).min(1e6);
    let pad = 0.05 * (ymax - ymin).max(1e-9);
    let (ymin, ymax) = (ymin - pad, ymax + pad);
    let h_line = vec![(0.0, t.h), (xmax, t.h)];
    // The firing zone: risk_gain above h, filled down to h.
    let above: Vec<(f64, f64)> = gain.iter().map(|&(x, y)| (x, y.max(t.h))).collect();
    let age_line: Vec<(f64, f64)> = src_age
        .filter(|a| *a >= 1.0)
        .map(|a| vec![(a.log10(), ymin), (a.log10(), ymax)])
        .unwrap_or_default();
    let mut datasets = vec![
        Dataset::default()
            .marker(Marker::Braille)
            .graph_type(GraphType::Area)
            .fill_to_y(t.h)
            .style(Style::default().fg(GAIN_COLOR))
            .data(&above),
        Dataset::default()
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(H_COLOR))
            .data(&h_line),
        Dataset::default()
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(DT_COLOR))
            .data(&dt),
        Dataset::default()
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(GAIN_COLOR))
            .data(&gain),
    ];
    if !age_line.is_empty() {
        datasets.push(
            Dataset::default()
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(AGE_COLOR))
                .data(&age_line),
        );
    }
    let chart = Chart::new(datasets)
        .legend_position(None)
        .x_axis(
            Axis::default()
                .bounds([0.0, xmax])
                .labels(axis_labels(0.0, xmax, 5, |x| fmt_dur(10f64.powf(x)))),
        )
        .y_axis(
            Axis::default()
                .bounds([ymin, ymax])
                .labels(axis_labels(ymin, ymax, 3, fmt_secs)),
        );
    f.render_widget(chart, chart_area);
    f.render_widget(
        Paragraph::new(Line::from(if wide {
            vec![
                Span::styled("━ risk_gain (▆ above h)", Style::default().fg(GAIN_COLOR)),
                Span::styled("  ━ dT", Style::default().fg(DT_COLOR)),
                Span::styled(
                    format!("  ━ h = {} s", fmt_secs(t.h)),
                    Style::default().fg(H_COLOR),
                ),
                Span::styled("  │ source age now", Style::default().fg(AGE_COLOR)),
                Span::styled(
                    "  · seconds against the source's uptime · fires when gain > h and dT < h",
                    dim(),
                ),
            ]
        } else {
            vec![
                Span::styled("━ gain", Style::default().fg(GAIN_COLOR)),
                Span::styled(" ━ dT", Style::default().fg(DT_COLOR)),
                Span::styled(
                    format!(" ━ h={} s", fmt_secs(t.h)),
                    Style::default().fg(H_COLOR),
                ),
                Span::styled(" │ age", Style::default().fg(AGE_COLOR)),
                Span::styled(" · fires: gain>h, dT<h", dim()),
            ]
        })),
        legend,
    );

    // The table at the standard uptimes (as many as fit).
    let fit = table_area.height.saturating_sub(1) as usize;
    let n = t.rows.len();
    let picked: Vec<usize> = if n <= fit {
        (0..n).collect()
    } else {
        let mut v: Vec<usize> = (0..fit).map(|i| i * (n - 1) / (fit.max(2) - 1)).collect();
        v.dedup();
        v
    };
    let rows: Vec<Row> = picked
        .iter()
        .filter_map(|&i| t.rows.get(i))
        .map(|r| {
            let fires = r.fires.iter().any(|x| x.fires);
            let mut cells = vec![
                Cell::from(format!("{:>8}", fmt_dur(r.uptime_s))),
                Cell::from(format!("{:>7}", fmt_secs(r.l_i))),
                Cell::from(format!("{:>7}", fmt_secs(r.c_planned))),
                Cell::from(format!("{:>7}", fmt_secs(r.l_j))),
                Cell::from(format!("{:>7}", fmt_secs(r.risk_gain))),
                Cell::from(format!("{:>7}", fmt_secs(r.dt))),
            ];
            if wide {
                cells.push(Cell::from(format!("{:>7}", fmt_secs(r.c_transfer))));
                cells.push(Cell::from(format!("{:>7}", fmt_secs(r.c_recompute))));
            }
            cells.push(Cell::from(Span::styled(
                if fires { "fires" } else { "-" },
                Style::default().fg(if fires { Color::Green } else { Color::DarkGray }),
            )));
            Row::new(cells)
        })
        .collect();
    let mut header = vec![
        "  uptime", "    L_i", "      C", "    L_j", "   gain", "     dT",
    ];
    let mut widths = vec![Constraint::Length(8)];
    widths.extend([Constraint::Length(7); 5]);
    if wide {
        header.extend(["  xfer", " recomp"]);
        widths.extend([Constraint::Length(7); 2]);
    }
    header.push("trigger");
    widths.push(Constraint::Length(7));
    f.render_widget(
        Table::new(rows, widths).header(Row::new(header).style(header_style())),
        table_area,
    );
}

/// Screen 6: risk gain against uptime for a move from the selected node.
pub struct Trigger;

impl Component for Trigger {
    fn id(&self) -> Screen {
        Screen("trigger")
    }

    fn title(&self) -> &'static str {
        "Trigger"
    }

    fn list(&self) -> List {
        List::Destinations
    }

    fn parent(&self) -> Option<Screen> {
        Some(Screen("survival"))
    }

    fn hints(&self, _app: &App) -> &'static str {
        "j/k destination · +/- context · h back · ? help · q quit"
    }

    fn help(&self) -> &'static [(&'static str, &'static str)] {
        &[("+  -", "larger / smaller context on the source node")]
    }

    fn jobs(&self, app: &App) -> Vec<LoadJob> {
        app.trigger_key()
            .map(LoadJob::Trigger)
            .into_iter()
            .collect()
    }

    /// `+` and `-` change the context on the source node.
    fn key(&self, app: &mut App, code: KeyCode) -> bool {
        match code {
            KeyCode::Char('+') | KeyCode::Char('=') => {
                app.context_idx = (app.context_idx + 1).min(TRIGGER_CONTEXTS.len() - 1);
            }
            KeyCode::Char('-') | KeyCode::Char('_') => {
                app.context_idx = app.context_idx.saturating_sub(1);
            }
            _ => return false,
        }
        true
    }

    fn render(&self, app: &App, f: &mut Frame, area: Rect) {
        render(app, f, area)
    }
}
