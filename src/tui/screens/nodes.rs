//! Screen 2: the nodes of the selected source, sortable, each with its availability strip.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;

use crate::tui::app::{App, List, Screen};
use crate::tui::component::Component;
use crate::tui::data::SourceData;
use crate::tui::widgets::{
    block, dim, fmt_dur, fmt_dur_opt, fmt_instant, fmt_num, header_style, message, selected_style,
    source_or_message, strip_line, truncate,
};

/// Header of the weight column and what it means.
fn weight_legend(d: &SourceData) -> (&'static str, String) {
    match d.shrinkage.estimator.as_str() {
        "beta" => (
            "w",
            format!("beta M={}: w = n/(n+M)", fmt_num(d.shrinkage.m)),
        ),
        "frailty" => (
            "z",
            format!("frailty θ={}: z = E[Z|data]", fmt_num(d.shrinkage.theta)),
        ),
        _ => ("w", "no shrinkage".to_string()),
    }
}

/// Draws the nodes screen.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let Some(d) = source_or_message(app, f, area, "Nodes") else {
        return;
    };
    let nodes = app.visible_nodes(d);
    let table_h = (nodes.len() as u16 + 3)
        .max(5)
        .min(area.height.saturating_sub(5));
    let [top, detail, legend] = Layout::vertical([
        Constraint::Length(table_h),
        Constraint::Min(4),
        Constraint::Length(1),
    ])
    .areas(area);
    let id_w = d
        .nodes
        .iter()
        .map(|n| d.short_id(&n.id).chars().count())
        .max()
        .unwrap_or(4)
        .clamp(6, if area.width >= 120 { 28 } else { 18 }) as u16;
    // A pool column when the latest run's `[[pools]]` put the source's nodes in pools.
    let pool_w = d
        .nodes
        .iter()
        .filter_map(|n| n.pool.as_ref())
        .map(|p| p.chars().count())
        .max()
        .map(|w| w.clamp(4, 16) as u16);
    let mut fixed = vec![id_w];
    fixed.extend(pool_w);
    fixed.extend([5, 4, 9, 9, 5]);
    let used: u16 = fixed.iter().sum::<u16>() + fixed.len() as u16 + 2 + 2;
    let strip_w = area.width.saturating_sub(used).max(8);
    let (wname, wlegend) = weight_legend(d);
    let rows: Vec<Row> = nodes
        .iter()
        .map(|n| {
            let mut cells = vec![Cell::from(truncate(d.short_id(&n.id), id_w as usize))];
            if let Some(w) = pool_w {
                cells.push(Cell::from(truncate(
                    n.pool.as_deref().unwrap_or("-"),
                    w as usize,
                )));
            }
            cells.extend([
                Cell::from(format!("{:>5}", n.sessions)),
                Cell::from(format!("{:>4}", n.events)),
                Cell::from(format!("{:>9}", fmt_dur_opt(n.median_s))),
                Cell::from(match n.current_age_s {
                    Some(a) => Line::from(format!("{:>9}", fmt_dur(a))),
                    None => Line::from(Span::styled(format!("{:>9}", "down"), dim())),
                }),
                Cell::from(format!(
                    "{:>5}",
                    n.weight.map_or("-".into(), |w| format!("{w:.2}"))
                )),
                Cell::from(strip_line(&n.strip, &n.censor_bins, strip_w as usize)),
            ]);
            Row::new(cells)
        })
        .collect();
    let strip_title = format!(
        "{} → {}",
        fmt_instant(d.span.0, &d.time_base),
        fmt_instant(d.span.1, &d.time_base)
    );
    let mut header = vec![Cell::from("node")];
    if pool_w.is_some() {
        header.push(Cell::from("pool"));
    }
    header.extend([
        Cell::from("sess"),
        Cell::from("fail"),
        Cell::from("   median"),
        Cell::from("      age"),
        Cell::from(format!("{wname:>5}")),
        Cell::from(truncate(
            &format!("up/down {strip_title}"),
            strip_w as usize,
        )),
    ]);
    let header = Row::new(header).style(header_style());
    let mut widths: Vec<Constraint> = fixed.iter().map(|&w| Constraint::Length(w)).collect();
    widths.push(Constraint::Length(strip_w));
    let sort = app.sort(List::Nodes);
    let prefix = if d.id_prefix > 0 {
        d.nodes
            .first()
            .and_then(|n| n.id.get(..d.id_prefix))
            .map_or(String::new(), |p| format!(" {p}…"))
    } else {
        String::new()
    };
    let title = format!(
        " Nodes of {}{} ({}) · by {} {} ",
        d.source,
        prefix,
        nodes.len(),
        List::Nodes
            .sort_columns()
            .get(sort.column)
            .copied()
            .unwrap_or(""),
        if sort.descending { "↓" } else { "↑" },
    );
    let table = Table::new(rows, widths)
        .header(header)
        .block(block(title))
        .row_highlight_style(selected_style())
        .highlight_symbol("▶ ");
    let mut state = TableState::default().with_selected(app.selected_index(List::Nodes));
    f.render_stateful_widget(table, top, &mut state);
    render_detail(app, f, detail, d);
    let mut spans = vec![
        Span::styled(
            " █",
            ratatui::style::Style::default().fg(ratatui::style::Color::Green),
        ),
        Span::raw(" up "),
        Span::styled(
            "▒",
            ratatui::style::Style::default().fg(ratatui::style::Color::Green),
        ),
        Span::raw(" partly "),
        Span::styled(
            "·",
            ratatui::style::Style::default().fg(ratatui::style::Color::Red),
        ),
        Span::raw(" down "),
        Span::styled(
            "┃",
            ratatui::style::Style::default().fg(ratatui::style::Color::Yellow),
        ),
        Span::raw(" censored · "),
        Span::styled(wlegend, dim()),
    ];
    if d.excluded_truncated > 0 {
        spans.push(Span::styled(
            format!(
                " · {} truncated sessions of unknown age left out",
                d.excluded_truncated
            ),
            dim(),
        ));
    }
    f.render_widget(Paragraph::new(Line::from(spans)), legend);
}

/// The selected node in words.
fn render_detail(app: &App, f: &mut Frame, area: Rect, d: &SourceData) {
    let Some(n) = app.sel_node.as_deref().and_then(|id| d.node(id)) else {
        f.render_widget(message("Node", vec![Line::from("No node selected.")]), area);
        return;
    };
    let (wname, _) = weight_legend(d);
    let mut lines = vec![
        Line::from(Span::styled(n.id.clone(), header_style())),
        Line::from(format!(
            "{} sessions, {} failures, {} censored · Kaplan-Meier median up-time {}",
            n.sessions,
            n.events,
            n.sessions - n.events,
            n.median_s.map_or("not reached".into(), fmt_dur)
        )),
        Line::from(match n.current_age_s {
            Some(a) => format!("up for {} when the observation ended", fmt_dur(a)),
            None => "down when the observation ended".to_string(),
        }),
    ];
    let weight = match (wname, n.weight) {
        ("w", Some(w)) => format!(
            "shrunk curve: {:.0}% the node's own data, {:.0}% the pooled curve (w = n/(n+M))",
            100.0 * w,
            100.0 * (1.0 - w)
        ),
        ("z", Some(z)) => format!(
            "frailty z = {z:.2}: {}",
            if z > 1.05 {
                "riskier than the fleet"
            } else if z < 0.95 {
                "safer than the fleet"
            } else {
                "about as risky as the fleet"
            }
        ),
        _ => "no shrinkage: the node carries the pooled curve".to_string(),
    };
    lines.push(Line::from(weight));
    if let Some((k, lo, hi, v)) = &n.weibull {
        lines.push(Line::from(format!(
            "node Weibull k = {k:.2} [{lo:.2}, {hi:.2}]: {v} hazard"
        )));
    }
    lines.push(Line::from(Span::styled(
        "Enter: its survival curves · 6: migration trigger from it",
        dim(),
    )));
    f.render_widget(
        ratatui::widgets::Paragraph::new(lines)
            .block(block(" Node "))
            .wrap(ratatui::widgets::Wrap { trim: true }),
        area,
    );
}

/// Screen 2: the nodes of the selected source.
pub struct Nodes;

impl Component for Nodes {
    fn id(&self) -> Screen {
        Screen("nodes")
    }

    fn title(&self) -> &'static str {
        "Nodes"
    }

    fn list(&self) -> List {
        List::Nodes
    }

    fn child(&self) -> Option<Screen> {
        Some(Screen("survival"))
    }

    fn parent(&self) -> Option<Screen> {
        Some(Screen::HOME)
    }

    fn hints(&self, _app: &App) -> &'static str {
        "j/k move · Enter survival · / filter · s sort · ? help · q quit"
    }

    fn render(&self, app: &App, f: &mut Frame, area: Rect) {
        render(app, f, area)
    }
}
