//! Reusable pieces of the screens: number formats, curve point builders for `Chart`, the
//! availability strip, the signed bar chart of the oracle gap, small layout helpers, and what
//! a screen shows while its data loads or when there is none.

use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use ratatui::Frame;

use super::app::{App, Load};
use super::data::{LoadJob, Loaded, ReplayData, SourceData, STRIP_FULL, STRIP_UNOBSERVED};
use crate::output::{duration_text, human_float};

/// Colours of series (policies, nodes), in order.
pub const PALETTE: [Color; 9] = [
    Color::Cyan,
    Color::Yellow,
    Color::Green,
    Color::Magenta,
    Color::LightBlue,
    Color::LightRed,
    Color::LightGreen,
    Color::LightMagenta,
    Color::White,
];

/// Style of titles and headers.
pub(crate) fn header_style() -> Style {
    Style::default()
        .fg(Color::Yellow)
        .add_modifier(Modifier::BOLD)
}

/// Style of the selected row.
pub(crate) fn selected_style() -> Style {
    Style::default()
        .bg(Color::DarkGray)
        .add_modifier(Modifier::BOLD)
}

/// Style of secondary text.
pub(crate) fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}

/// A bordered block with a title.
pub fn block(title: impl Into<Line<'static>>) -> Block<'static> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(Style::default().fg(Color::DarkGray))
        .title(title.into().style(header_style()))
}

/// A duration for people: `45 s`, `12.5 min`, `3.4 h`, `2.1 d` ([`duration_text`]).
pub(crate) fn fmt_dur(s: f64) -> String {
    duration_text(s)
}

/// An optional duration.
pub(crate) fn fmt_dur_opt(s: Option<f64>) -> String {
    s.map_or("-".into(), fmt_dur)
}

/// An optional number with four significant digits.
pub(crate) fn fmt_num(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() => human_float(v),
        _ => "-".into(),
    }
}

/// Seconds with a sign and fixed decimals for the explanation columns (`-` when NaN).
pub(crate) fn fmt_secs(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let a = x.abs();
    if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// `value [lo, hi]`, or `value` without a CI.
pub(crate) fn fmt_ci(v: Option<f64>, ci: Option<(f64, f64)>) -> String {
    match v {
        Some(v) => crate::output::interval_text(v, ci),
        None => "-".into(),
    }
}

/// A percentage with no decimals.
pub(crate) fn fmt_pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:.0}%", 100.0 * x)
    } else {
        "-".into()
    }
}

/// A point in time of a source: a UTC date for `utc` sources, hours otherwise.
pub(crate) fn fmt_instant(t: f64, time_base: &str) -> String {
    if time_base == "utc" {
        chrono::DateTime::from_timestamp(t as i64, 0)
            .map(|d| d.format("%Y-%m-%d %H:%M").to_string())
            .unwrap_or_else(|| human_float(t))
    } else {
        fmt_dur(t)
    }
}

/// `s` cut to `width` characters with an ellipsis.
pub fn truncate(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        s.to_string()
    } else if width == 0 {
        String::new()
    } else {
        let mut out: String = s.chars().take(width - 1).collect();
        out.push('…');
        out
    }
}

/// The points of a step function `S` (1 before `t[0]`) as a polyline from x = 0 to `xmax`.
pub(crate) fn step_points(t: &[f64], s: &[f64], xmax: f64) -> Vec<(f64, f64)> {
    let mut out = vec![(0.0, 1.0)];
    let mut prev = 1.0;
    for (&ti, &si) in t.iter().zip(s) {
        if ti > xmax {
            break;
        }
        let ti = ti.max(0.0);
        out.push((ti, prev));
        out.push((ti, si));
        prev = si;
    }
    out.push((xmax, prev));
    out
}

/// `f` sampled at `n + 1` evenly spaced points of `[0, xmax]`.
pub(crate) fn sampled_points(f: impl Fn(f64) -> f64, xmax: f64, n: usize) -> Vec<(f64, f64)> {
    let n = n.max(1);
    (0..=n)
        .map(|i| {
            let x = xmax * i as f64 / n as f64;
            (x, f(x))
        })
        .collect()
}

/// A filled band between `lo(x)` and `hi(x)` as one zig-zag polyline (drawn as a line, it
/// covers the band at the chart's resolution).
pub(crate) fn band_points(
    band: impl Fn(f64) -> (f64, f64),
    xmax: f64,
    n: usize,
) -> Vec<(f64, f64)> {
    let n = n.max(1);
    let mut out = Vec::with_capacity(2 * n + 2);
    for i in 0..=n {
        let x = xmax * i as f64 / n as f64;
        let (lo, hi) = band(x);
        if i % 2 == 0 {
            out.push((x, lo));
            out.push((x, hi));
        } else {
            out.push((x, hi));
            out.push((x, lo));
        }
    }
    out
}

/// Axis labels at `ticks` evenly spaced values over `[lo, hi]`.
pub(crate) fn axis_labels(
    lo: f64,
    hi: f64,
    ticks: usize,
    fmt: impl Fn(f64) -> String,
) -> Vec<Line<'static>> {
    let ticks = ticks.max(2);
    (0..ticks)
        .map(|i| Line::from(fmt(lo + (hi - lo) * i as f64 / (ticks - 1) as f64)))
        .collect()
}

/// A rounded upper bound for an axis (1, 1.5, 2, 3, 4, 5, 6 or 8 times a power of ten), at
/// least `x`.
pub(crate) fn nice_max(x: f64) -> f64 {
    if !(x.is_finite() && x > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(x.log10().floor());
    for m in [1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0] {
        if m * p >= x {
            return m * p;
        }
    }
    10.0 * p
}

/// The availability strip of a node, `width` cells over the source's span: `█` up, `▒` up part
/// of the cell, `·` down, blank outside the node's observation, `┃` a censored session end.
pub(crate) fn strip_line(strip: &[u8], censor_bins: &[u16], width: usize) -> Line<'static> {
    if width == 0 || strip.is_empty() {
        return Line::default();
    }
    let bins = strip.len();
    let mut spans = Vec::with_capacity(width);
    for c in 0..width {
        let a = c * bins / width;
        let b = ((c + 1) * bins / width).max(a + 1).min(bins);
        let cell = &strip[a..b];
        let observed: Vec<u8> = cell
            .iter()
            .copied()
            .filter(|&v| v != STRIP_UNOBSERVED)
            .collect();
        let censored = censor_bins
            .iter()
            .any(|&k| (k as usize) >= a && (k as usize) < b);
        let (ch, style) = if censored {
            ('┃', Style::default().fg(Color::Yellow))
        } else if observed.is_empty() {
            (' ', Style::default())
        } else {
            let f = observed.iter().map(|&v| v as f64).sum::<f64>()
                / (observed.len() as f64 * STRIP_FULL as f64);
            if f >= 0.85 {
                ('█', Style::default().fg(Color::Green))
            } else if f > 0.15 {
                ('▒', Style::default().fg(Color::Green))
            } else if f > 0.0 {
                ('░', Style::default().fg(Color::Green))
            } else {
                ('·', Style::default().fg(Color::Red))
            }
        };
        spans.push(Span::styled(ch.to_string(), style));
    }
    Line::from(spans)
}

/// One bar of [`SignedBars`].
#[derive(Debug, Clone)]
pub struct SignedBar {
    /// Label on the left.
    pub label: String,
    /// The value (`None`: shown as `-`).
    pub value: Option<f64>,
    /// 95 % CI, drawn as `[` and `]` marks.
    pub ci: Option<(f64, f64)>,
    /// Bar colour.
    pub color: Color,
    /// Highlight the row.
    pub selected: bool,
}

/// Horizontal bars of signed values on a fixed scale with a zero line, e.g. the fraction of the
/// fastest-to-oracle gap closed (1 = as good as the oracle, 0 = as good as `fastest`, below 0 =
/// worse than `fastest`).
#[derive(Debug, Clone)]
pub struct SignedBars {
    /// The bars, one per row.
    pub bars: Vec<SignedBar>,
    /// Left end of the scale.
    pub min: f64,
    /// Right end of the scale.
    pub max: f64,
}

impl Widget for SignedBars {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.width < 12 || area.height == 0 {
            return;
        }
        let label_w = self
            .bars
            .iter()
            .map(|b| b.label.chars().count())
            .max()
            .unwrap_or(0)
            .min(area.width as usize / 3) as u16;
        let value_w = 6u16;
        let bar_x = area.x + label_w + 1;
        let bar_w = area.width.saturating_sub(label_w + 1 + value_w + 1);
        if bar_w < 4 {
            return;
        }
        let span = (self.max - self.min).max(1e-12);
        let col = |v: f64| -> u16 {
            let f = ((v - self.min) / span).clamp(0.0, 1.0);
            (f * (bar_w - 1) as f64).round() as u16
        };
        let zero = col(0.0);
        for (i, b) in self.bars.iter().enumerate() {
            let y = area.y + i as u16;
            if y >= area.bottom() {
                break;
            }
            let label_style = if b.selected {
                selected_style()
            } else {
                Style::default()
            };
            buf.set_stringn(
                area.x,
                y,
                truncate(&b.label, label_w as usize),
                label_w as usize,
                label_style,
            );
            for x in 0..bar_w {
                buf.set_string(bar_x + x, y, if x == zero { "│" } else { " " }, dim());
            }
            if let Some(v) = b.value.filter(|v| v.is_finite()) {
                let c = col(v);
                let (a, z) = if c >= zero { (zero, c) } else { (c, zero) };
                for x in a..=z {
                    buf.set_string(bar_x + x, y, "█", Style::default().fg(b.color));
                }
                if let Some((lo, hi)) = b.ci {
                    if lo.is_finite() && hi.is_finite() {
                        let ci_style = Style::default().fg(Color::White);
                        buf.set_string(bar_x + col(lo), y, "[", ci_style);
                        buf.set_string(bar_x + col(hi), y, "]", ci_style);
                    }
                }
            }
            let text = b.value.map_or("-".to_string(), |v| format!("{v:.2}"));
            buf.set_stringn(
                bar_x + bar_w + 1,
                y,
                format!("{text:>6}"),
                value_w as usize,
                label_style,
            );
        }
    }
}

/// A message box: a title and lines of text, wrapped.
pub fn message(title: &str, lines: Vec<Line<'static>>) -> Paragraph<'static> {
    Paragraph::new(lines)
        .block(block(format!(" {title} ")))
        .wrap(Wrap { trim: false })
        .alignment(Alignment::Left)
}

/// A centred rectangle of at most `w` x `h` inside `area`.
pub(crate) fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

/// One line saying a load is under way or failed (for screens waiting on data).
pub(crate) fn load_status<T>(what: &str, load: Option<&Load<T>>) -> Line<'static> {
    match load {
        Some(Load::Failed(e)) => Line::from(Span::styled(
            format!("{what} failed: {e}"),
            Style::default().fg(Color::Red),
        )),
        _ => Line::from(Span::styled(format!("{what}…"), dim())),
    }
}

/// The data of the selected source, or a message box explaining why there is none.
pub(crate) fn source_or_message<'a>(
    app: &'a App,
    f: &mut Frame,
    area: Rect,
    title: &str,
) -> Option<&'a SourceData> {
    let Some(src) = app.sel_source.clone() else {
        let text = if app.overview().is_some() {
            "No source selected: pick one on screen 1 (Sources) and press Enter."
        } else {
            "Reading the store…"
        };
        f.render_widget(message(title, vec![Line::from(text)]), area);
        return None;
    };
    if let Some(r) = app.selected_source_row() {
        if r.nodes == 0 {
            f.render_widget(
                message(
                    title,
                    vec![Line::from(format!(
                        "{src} has no nodes (a request workload): pick an availability source on screen 1."
                    ))],
                ),
                area,
            );
            return None;
        }
    }
    let load = app.load_of(&LoadJob::Source(src.clone()), |l| match l {
        Loaded::Source(d) => Some(d.as_ref()),
        _ => None,
    });
    match load {
        Some(Load::Ready(d)) => Some(d),
        other => {
            f.render_widget(
                message(
                    title,
                    vec![load_status(
                        &format!("Loading and fitting {src}"),
                        other.as_ref(),
                    )],
                ),
                area,
            );
            None
        }
    }
}

fn no_runs(app: &App) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::from("No replay runs in this store yet."),
        Line::default(),
        Line::from("Replay a request workload over a source's nodes under every policy:"),
        Line::from(Span::styled(
            "  hazardserve replay --source NODES_SOURCE --workload WORKLOAD_SOURCE",
            header_style(),
        )),
        Line::from("or run everything on the bundled samples:"),
        Line::from(Span::styled("  hazardserve demo", header_style())),
    ];
    if let Some(o) = app.overview() {
        if !o.sources.iter().any(|s| s.is_workload()) {
            lines.push(Line::default());
            lines.push(Line::from(
                "A replay needs a request workload: ingest one with --format azure-llm, mooncake or lengths-csv.",
            ));
        }
    }
    lines
}

/// The shown run, or draws why there is none.
pub(crate) fn replay_or_message<'a>(
    app: &'a App,
    f: &mut Frame,
    area: Rect,
    title: &str,
) -> Option<&'a ReplayData> {
    match app.replay() {
        Some(Load::Ready(Some(r))) => Some(r.as_ref()),
        Some(Load::Ready(None)) => {
            f.render_widget(message(title, no_runs(app)), area);
            None
        }
        other => {
            f.render_widget(
                message(
                    title,
                    vec![load_status("Loading the replay run", other.as_ref())],
                ),
                area,
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(fmt_dur(45.0), "45 s");
        assert_eq!(fmt_dur(750.0), "12.5 min");
        assert_eq!(fmt_dur(3600.0), "1 h");
        assert_eq!(fmt_dur(3.5 * 3600.0), "3.5 h");
        assert_eq!(fmt_dur(5.0 * 86400.0), "5 d");
        assert_eq!(fmt_dur(f64::NAN), "-");
    }

    #[test]
    fn steps_and_bands() {
        let p = step_points(&[1.0, 2.0], &[0.5, 0.25], 3.0);
        assert_eq!(
            p,
            vec![
                (0.0, 1.0),
                (1.0, 1.0),
                (1.0, 0.5),
                (2.0, 0.5),
                (2.0, 0.25),
                (3.0, 0.25)
            ]
        );
        let b = band_points(|_| (0.2, 0.8), 1.0, 2);
        assert_eq!(b.len(), 6);
        assert_eq!(nice_max(3.2), 4.0);
        assert!((nice_max(0.07) - 0.08).abs() < 1e-12);
    }

    #[test]
    fn strip_glyphs() {
        let strip = [STRIP_FULL, 0, STRIP_UNOBSERVED, STRIP_FULL];
        let line = strip_line(&strip, &[3], 4);
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "█· ┃");
    }
}
