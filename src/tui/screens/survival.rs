//! Screen 3: the survival curves of the selected node against its source.
//!
//! The node's own Kaplan-Meier step curve, its shrunk curve (the priors a serving system would
//! load), the pooled curve with its 95 % band, censor ticks, the node's at-risk counts, and the
//! conditional survival at the node's current age.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph, Sparkline};
use ratatui::Frame;

use crate::survival::curve::ConditionalSurvival;
use crate::tui::app::{App, List, Screen};
use crate::tui::component::Component;
use crate::tui::data::{KmSteps, NodeData, SourceData};
use crate::tui::widgets::{
    axis_labels, band_points, block, dim, fmt_dur, fmt_num, message, nice_max, sampled_points,
    source_or_message, step_points,
};

const KM_COLOR: Color = Color::Yellow;
const SHRUNK_COLOR: Color = Color::Green;
const POOLED_COLOR: Color = Color::LightBlue;
const BAND_COLOR: Color = Color::DarkGray;
const AGE_COLOR: Color = Color::Magenta;

/// A time unit for an axis spanning `xmax` seconds: (seconds per unit, suffix).
fn unit_for(xmax: f64) -> (f64, &'static str) {
    if xmax < 2.0 * 3600.0 {
        (60.0, "min")
    } else if xmax < 4.0 * 86_400.0 {
        (3600.0, "h")
    } else {
        (86_400.0, "d")
    }
}

/// First time at which a step curve falls to `q` or below.
fn quantile(steps: &KmSteps, q: f64) -> Option<f64> {
    steps
        .s
        .iter()
        .position(|&s| s <= q)
        .and_then(|i| steps.t.get(i).copied())
}

fn conditional(steps: &KmSteps, a: f64, x: f64) -> Option<f64> {
    let sa = steps.at(a);
    (sa > 0.0).then(|| steps.at(a + x) / sa)
}

fn title(d: &SourceData, n: &NodeData) -> String {
    let id = d.short_id(&n.id);
    match (&n.weibull, &d.verdict) {
        (Some((k, lo, hi, v)), _) => {
            format!(" {id} · node Weibull k {k:.2} [{lo:.2}, {hi:.2}]: {v} hazard ")
        }
        (None, Some(v)) => match &v.model {
            Some(m) => format!(" {id} · pooled hazard: {} ({m} model) ", v.verdict),
            None => format!(" {id} · pooled hazard: {} ", v.verdict),
        },
        (None, None) => format!(" {id} "),
    }
}

/// Draws the survival screen.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let Some(d) = source_or_message(app, f, area, "Survival") else {
        return;
    };
    let Some(n) = app.sel_node.as_deref().and_then(|id| d.node(id)) else {
        f.render_widget(
            message(
                "Survival",
                vec![Line::from(
                    "No node selected: pick one on screen 2 (Nodes).",
                )],
            ),
            area,
        );
        return;
    };
    // The pooled hazard under the survival curve, when there is room and enough events.
    let hazard_rows = if d.hazard.is_some() && area.height >= 30 {
        7
    } else {
        0
    };
    let cause_rows = u16::from(!d.causes.is_empty());
    let [chart_area, hazard_area, risk_area, info_area] = Layout::vertical([
        Constraint::Min(8),
        Constraint::Length(hazard_rows),
        Constraint::Length(2),
        Constraint::Length(3 + cause_rows),
    ])
    .areas(area);

    // Ages up to where both the node's and the pooled curve fall to 10 % (or end), and the
    // node's current age.
    let node_end = quantile(&n.km, 0.1).unwrap_or_else(|| n.km.last_time());
    let pooled_end = quantile(&d.pooled.km, 0.1).unwrap_or_else(|| d.pooled.km.last_time());
    let xmax_s = node_end
        .max(pooled_end)
        .max(n.current_age_s.unwrap_or(0.0))
        .max(60.0);
    let (unit, suffix) = unit_for(xmax_s);
    let xmax = nice_max(xmax_s / unit);
    let res = (chart_area.width as usize).max(10) * 2;
    let shrunk = d.priors.as_ref().map(|p| p.node_curve(&n.id));

    let band = band_points(|x| d.pooled.band_at(x * unit), xmax, res);
    let pooled = sampled_points(|x| d.pooled.km.at(x * unit), xmax, res);
    let shrunk_pts = shrunk
        .as_ref()
        .map(|c| sampled_points(|x| c.survival(x * unit), xmax, res))
        .unwrap_or_default();
    let km_t: Vec<f64> = n.km.t.iter().map(|t| t / unit).collect();
    let km = step_points(&km_t, &n.km.s, xmax);
    let censors: Vec<(f64, f64)> = n
        .spans
        .iter()
        .filter(|s| !s.event && s.exit / unit <= xmax)
        .map(|s| (s.exit / unit, n.km.at(s.exit)))
        .collect();
    let age_line: Vec<(f64, f64)> = n
        .current_age_s
        .filter(|a| a / unit <= xmax)
        .map(|a| vec![(a / unit, 0.0), (a / unit, 1.0)])
        .unwrap_or_default();

    let mut datasets = vec![
        Dataset::default()
            .name("pooled 95% CI")
            .marker(Marker::Dot)
            .graph_type(GraphType::Scatter)
            .style(Style::default().fg(BAND_COLOR))
            .data(&band),
        Dataset::default()
            .name("pooled")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(POOLED_COLOR))
            .data(&pooled),
    ];
    if !shrunk_pts.is_empty() {
        datasets.push(
            Dataset::default()
                .name("shrunk")
                .marker(Marker::Custom('*'))
                .graph_type(GraphType::Line)
                .style(Style::default().fg(SHRUNK_COLOR))
                .data(&shrunk_pts),
        );
    }
    datasets.push(
        Dataset::default()
            .name("node KM")
            .marker(Marker::HalfBlock)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(KM_COLOR))
            .data(&km),
    );
    if !age_line.is_empty() {
        datasets.push(
            Dataset::default()
                .name("age now")
                .marker(Marker::Custom('│'))
                .graph_type(GraphType::Line)
                .style(Style::default().fg(AGE_COLOR))
                .data(&age_line),
        );
    }
    if !censors.is_empty() {
        datasets.push(
            Dataset::default()
                .name("censored")
                .marker(Marker::Custom('+'))
                .graph_type(GraphType::Scatter)
                .style(Style::default().fg(Color::White))
                .data(&censors),
        );
    }
    let chart = Chart::new(datasets)
        .block(block(title(d, n)))
        .legend_position(None)
        .x_axis(
            Axis::default()
                .bounds([0.0, xmax])
                .labels(axis_labels(0.0, xmax, 5, |x| {
                    format!("{} {suffix}", fmt_num(Some(x)))
                })),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, 1.0])
                .labels(axis_labels(0.0, 1.0, 3, |y| format!("{y:.1}"))),
        );
    f.render_widget(chart, chart_area);
    if hazard_rows > 0 {
        if let Some(h) = &d.hazard {
            render_hazard(f, hazard_area, h, unit, suffix, xmax);
        }
    }

    // At-risk counts of the node over the same ages.
    let label_w = 12u16;
    let [label, spark] =
        Layout::horizontal([Constraint::Length(label_w), Constraint::Min(1)]).areas(risk_area);
    let cols = spark.width.max(1) as usize;
    let at_risk: Vec<u64> = (0..cols)
        .map(|c| {
            let x = (c as f64 + 0.5) / cols as f64 * xmax * unit;
            n.spans
                .iter()
                .filter(|s| s.entry <= x && x < s.exit)
                .count() as u64
        })
        .collect();
    let max_risk = at_risk.iter().copied().max().unwrap_or(0);
    f.render_widget(
        Paragraph::new(vec![
            Line::from(Span::styled(" at risk", dim())),
            Line::from(Span::styled(format!(" max {max_risk}"), dim())),
        ]),
        label,
    );
    f.render_widget(
        Sparkline::default()
            .data(at_risk)
            .max(max_risk.max(1))
            .style(Style::default().fg(KM_COLOR)),
        spark,
    );

    // Conditional survival at the current age, and the legend.
    let fmt_p = |p: Option<f64>| p.map_or("-".to_string(), |v| format!("{v:.2}"));
    let (age, lead) = match n.current_age_s {
        Some(a) => (a, format!(" up {} now", fmt_dur(a))),
        None => (0.0, " down now; a new session".to_string()),
    };
    let cond = |h: f64, first: bool| -> Line<'static> {
        let mut spans = vec![if first {
            Span::styled(lead.clone(), Style::default().fg(AGE_COLOR))
        } else {
            Span::raw(" ".repeat(lead.chars().count()))
        }];
        spans.push(Span::raw(format!(" → P(up {} more):", fmt_dur(h))));
        spans.push(Span::styled(
            format!(" KM {}", fmt_p(conditional(&n.km, age, h))),
            Style::default().fg(KM_COLOR),
        ));
        spans.push(Span::styled(
            format!(
                " · shrunk {}",
                fmt_p(shrunk.as_ref().map(|c| c.conditional(age, h)))
            ),
            Style::default().fg(SHRUNK_COLOR),
        ));
        spans.push(Span::styled(
            format!(" · pooled {}", fmt_p(conditional(&d.pooled.km, age, h))),
            Style::default().fg(POOLED_COLOR),
        ));
        Line::from(spans)
    };
    let legend = Line::from(vec![
        // Each curve has its own glyph as well as its colour (NO_COLOR, colour blindness).
        Span::styled(" ▀ node KM", Style::default().fg(KM_COLOR)),
        Span::styled(" * shrunk", Style::default().fg(SHRUNK_COLOR)),
        Span::styled(" ⣿ pooled", Style::default().fg(POOLED_COLOR)),
        Span::styled(" • pooled 95% CI", Style::default().fg(BAND_COLOR)),
        Span::raw(" + censored"),
        Span::styled(" │ age now", Style::default().fg(AGE_COLOR)),
        Span::styled(
            format!(
                " · {} sessions, median {}",
                n.sessions,
                n.median_s.map_or("not reached".into(), fmt_dur)
            ),
            dim(),
        ),
    ]);
    let mut info = vec![cond(3600.0, true), cond(6.0 * 3600.0, false), legend];
    if !d.causes.is_empty() {
        // Competing risks (`fit --by-cause`): how the pooled sessions end.
        let mut spans = vec![Span::raw(" ends (pooled):")];
        for (i, c) in d.causes.iter().take(4).enumerate() {
            spans.push(Span::raw(format!(
                "{} {} {:.0} % (incidence {:.2})",
                if i == 0 { "" } else { " ·" },
                c.cause,
                100.0 * c.share,
                c.incidence
            )));
        }
        if d.causes.len() > 4 {
            spans.push(Span::styled(
                format!(" · {} more causes", d.causes.len() - 4),
                dim(),
            ));
        }
        info.push(Line::from(spans));
    }
    f.render_widget(Paragraph::new(info), info_area);
}

/// The pooled smoothed hazard (per hour) with its pointwise 95 % interval, on the survival
/// chart's age axis.
fn render_hazard(
    f: &mut Frame,
    area: Rect,
    h: &crate::survival::hazard::SmoothedHazard,
    unit: f64,
    suffix: &str,
    xmax: f64,
) {
    let pts = |g: &dyn Fn(&crate::survival::hazard::HazardPoint) -> f64| -> Vec<(f64, f64)> {
        h.points
            .iter()
            .filter(|p| p.t / unit <= xmax)
            .map(|p| (p.t / unit, g(p) * 3600.0))
            .filter(|(_, y)| y.is_finite())
            .collect()
    };
    let mid = pts(&|p| p.hazard);
    let lo = pts(&|p| p.ci_low);
    let hi = pts(&|p| p.ci_high);
    // Scaled to the estimate (the interval is wide where few are at risk; its points above
    // the top are left out rather than flattening the curve).
    let ymax = nice_max(mid.iter().map(|&(_, y)| y).fold(0.0, f64::max).max(1e-9) * 1.5);
    let lo: Vec<(f64, f64)> = lo.into_iter().filter(|&(_, y)| y <= ymax).collect();
    let hi: Vec<(f64, f64)> = hi.into_iter().filter(|&(_, y)| y <= ymax).collect();
    let ci = |pts| {
        Dataset::default()
            .name("95% CI")
            .marker(Marker::Dot)
            .graph_type(GraphType::Scatter)
            .style(Style::default().fg(BAND_COLOR))
            .data(pts)
    };
    let datasets = vec![
        ci(&lo),
        ci(&hi),
        Dataset::default()
            .name("hazard")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(POOLED_COLOR))
            .data(&mid),
    ];
    let chart = Chart::new(datasets)
        .block(block(format!(
            " pooled hazard per hour (smoothed, bandwidth {:.2}; · 95% CI) ",
            h.bandwidth
        )))
        .legend_position(None)
        .x_axis(
            Axis::default()
                .bounds([0.0, xmax])
                .labels(axis_labels(0.0, xmax, 5, |x| {
                    format!("{} {suffix}", fmt_num(Some(x)))
                })),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, ymax])
                .labels(axis_labels(0.0, ymax, 2, |y| fmt_num(Some(y)))),
        );
    f.render_widget(chart, area);
}

/// Screen 3: the survival curves of the selected node.
pub struct Survival;

impl Component for Survival {
    fn id(&self) -> Screen {
        Screen("survival")
    }

    fn title(&self) -> &'static str {
        "Survival"
    }

    fn list(&self) -> List {
        List::Nodes
    }

    fn child(&self) -> Option<Screen> {
        Some(Screen("trigger"))
    }

    fn parent(&self) -> Option<Screen> {
        Some(Screen("nodes"))
    }

    fn hints(&self, _app: &App) -> &'static str {
        "j/k node · Enter trigger · h back · ? help · q quit"
    }

    fn render(&self, app: &App, f: &mut Frame, area: Rect) {
        render(app, f, area)
    }
}
