//! The report's plots as SVG text, drawn with plotters: survival curves with their band, the
//! per-group curves and the Weibull fit, node availability timelines, lines (the migration
//! trigger), a policy comparison with intervals, completion-time CDFs and the regime-map
//! heatmap. Every plot names its axes with their units.

use plotters::prelude::*;

use super::error::ReportError;

/// Plot size, pixels.
const SIZE: (u32, u32) = (760, 440);

fn err(e: impl std::fmt::Display) -> ReportError {
    ReportError::Plot(e.to_string())
}

/// The chart of every plot: two f64 axes on an SVG backend.
type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// The legend box of a chart's labelled series, at `pos`.
fn draw_legend<'a, 'b: 'a>(
    chart: &mut Chart<'a, 'b>,
    pos: SeriesLabelPosition,
) -> Result<(), ReportError> {
    chart
        .configure_series_labels()
        .position(pos)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.9))
        .draw()
        .map_err(err)
}

/// The legend key of a line series in colour `c`.
fn line_key(c: RGBColor) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
}

/// The label of an integer tick `v` of a category axis (empty between categories).
fn category(labels: &[String], v: f64) -> String {
    let i = v.round();
    if (v - i).abs() < 1e-6 && i >= 0.0 {
        labels.get(i as usize).cloned().unwrap_or_default()
    } else {
        String::new()
    }
}

/// A chart with one row per label down the y axis (row `i` at y = `i`, labelled) and `x`
/// across, its mesh drawn: the layout of the comparison and the timelines.
fn category_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    x: std::ops::Range<f64>,
    labels: &[String],
    x_desc: &str,
    y_desc: &str,
) -> Result<Chart<'a, 'b>, ReportError> {
    let n = labels.len().max(1);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(150)
        .build_cartesian_2d(x, -0.5f64..(n as f64 - 0.5))
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .y_labels(n)
        .y_label_formatter(&|y| category(labels, *y))
        .draw()
        .map_err(err)?;
    Ok(chart)
}

/// Colours of the series, in order.
const COLOURS: [RGBColor; 9] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
];

/// A step curve `S(t)` for `t` in hours, its 95 % band, and the fitted Weibull survival.
pub struct SurvivalPlot<'a> {
    /// Title.
    pub title: &'a str,
    /// (hours, S) steps.
    pub steps: Vec<(f64, f64)>,
    /// (hours, low, high) of the band at each step.
    pub band: Vec<(f64, f64, f64)>,
    /// Weibull (shape k, scale in hours), when fitted.
    pub weibull: Option<(f64, f64)>,
    /// Per-group Kaplan-Meier steps (group label, (hours, S) steps), drawn thin.
    pub groups: Vec<(String, Vec<(f64, f64)>)>,
}

/// A step function from (t, S) steps, starting at S = 1 at t = 0.
fn stairs(steps: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut stair = Vec::with_capacity(steps.len() * 2 + 1);
    let mut prev = 1.0;
    stair.push((0.0, 1.0));
    for &(t, s) in steps {
        stair.push((t, prev));
        stair.push((t, s));
        prev = s;
    }
    stair
}

/// Kaplan-Meier curve with its band and the Weibull overlay.
pub fn survival(p: &SurvivalPlot<'_>) -> Result<String, ReportError> {
    let xmax = p.steps.last().map_or(1.0, |s| s.0).max(1e-6) * 1.02;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(p.title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..xmax, 0f64..1.02f64)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("time since the session started (h)")
            .y_desc("survival S(t) (share still up)")
            .draw()
            .map_err(err)?;
        // Band: the polygon along the upper bound and back along the lower one.
        let mut poly: Vec<(f64, f64)> = Vec::new();
        for w in p.band.windows(2) {
            poly.push((w[0].0, w[0].2));
            poly.push((w[1].0, w[0].2));
        }
        for w in p.band.windows(2).rev() {
            poly.push((w[1].0, w[0].1));
            poly.push((w[0].0, w[0].1));
        }
        let band = COLOURS[0].mix(0.18);
        chart
            .draw_series(std::iter::once(Polygon::new(poly, band)))
            .map_err(err)?
            .label("95% band (Greenwood)")
            .legend(move |(x, y)| Rectangle::new([(x, y - 4), (x + 18, y + 4)], band.filled()));
        for (i, (name, steps)) in p.groups.iter().enumerate() {
            // Never the pooled curve's colour (0) or the Weibull fit's (1).
            let c = COLOURS[2 + i % (COLOURS.len() - 2)];
            chart
                .draw_series(LineSeries::new(stairs(steps), c.stroke_width(1)))
                .map_err(err)?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c));
        }
        let pooled = if p.groups.is_empty() {
            "Kaplan-Meier"
        } else {
            "Kaplan-Meier, pooled"
        };
        chart
            .draw_series(LineSeries::new(
                stairs(&p.steps),
                COLOURS[0].stroke_width(2),
            ))
            .map_err(err)?
            .label(pooled)
            .legend(line_key(COLOURS[0]));
        if let Some((k, scale)) = p.weibull {
            let pts: Vec<(f64, f64)> = (0..=200)
                .map(|i| {
                    let t = xmax * i as f64 / 200.0;
                    (t, (-(t / scale).powf(k)).exp())
                })
                .collect();
            chart
                .draw_series(DashedLineSeries::new(pts, 6, 4, COLOURS[1].stroke_width(2)))
                .map_err(err)?
                .label(format!("Weibull fit (k = {k:.2})"))
                .legend(line_key(COLOURS[1]));
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// One row of a comparison plot: label, value and interval.
pub struct Bar {
    /// Policy.
    pub label: String,
    /// Value.
    pub value: f64,
    /// 95 % interval.
    pub ci: Option<(f64, f64)>,
}

/// Horizontal dots with interval whiskers, one row per policy.
pub fn comparison(title: &str, x_desc: &str, bars: &[Bar]) -> Result<String, ReportError> {
    let lo = bars
        .iter()
        .map(|b| b.ci.map_or(b.value, |c| c.0))
        .fold(f64::INFINITY, f64::min);
    let hi = bars
        .iter()
        .map(|b| b.ci.map_or(b.value, |c| c.1))
        .fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if lo.is_finite() && hi.is_finite() {
        // The data's own range: policies a few percent apart stay apart.
        let pad = ((hi - lo) * 0.08)
            .max(hi.abs().max(lo.abs()) * 0.01)
            .max(1e-9);
        (lo - pad, hi + pad)
    } else {
        (0.0, 1.0)
    };
    let n = bars.len().max(1);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (SIZE.0, 80 + 30 * n as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
        let mut chart = category_chart(&root, title, lo..hi, &labels, x_desc, "policy")?;
        for (i, b) in bars.iter().enumerate() {
            let y = i as f64;
            let c = COLOURS[i % COLOURS.len()];
            if let Some((l, h)) = b.ci {
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(l, y), (h, y)],
                        c.stroke_width(2),
                    )))
                    .map_err(err)?;
            }
            chart
                .draw_series(std::iter::once(Circle::new((b.value, y), 5, c.filled())))
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// One line of a [`lines`] plot.
pub struct Line {
    /// Legend label.
    pub name: String,
    /// Points, in x order.
    pub pts: Vec<(f64, f64)>,
    /// Drawn dashed (a reference line, or the 10th series on when colours repeat).
    pub dashed: bool,
}

/// Lines on two linear axes; the y range spans the data (and 0 when `from_zero`).
pub fn lines(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Line],
    from_zero: bool,
    legend: SeriesLabelPosition,
) -> Result<String, ReportError> {
    let all = || series.iter().flat_map(|l| l.pts.iter());
    let xmax = all().map(|p| p.0).fold(0.0f64, f64::max).max(1e-6);
    let (mut ylo, mut yhi) = all().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
        (lo.min(p.1), hi.max(p.1))
    });
    if !(ylo.is_finite() && yhi.is_finite()) {
        (ylo, yhi) = (0.0, 1.0);
    }
    if from_zero {
        (ylo, yhi) = (ylo.min(0.0), yhi.max(0.0));
    }
    let pad = ((yhi - ylo) * 0.05).max(1e-6);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..xmax * 1.02, (ylo - pad)..(yhi + pad))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .draw()
            .map_err(err)?;
        for (i, l) in series.iter().enumerate() {
            let c = COLOURS[i % COLOURS.len()];
            let pts = l.pts.iter().copied();
            let drawn = if l.dashed {
                chart.draw_series(DashedLineSeries::new(pts, 6, 4, c.stroke_width(2)))
            } else {
                chart.draw_series(LineSeries::new(pts, c.stroke_width(2)))
            };
            drawn
                .map_err(err)?
                .label(l.name.clone())
                .legend(line_key(c));
        }
        draw_legend(&mut chart, legend)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Completion-time CDFs: per policy, (seconds, share of requests completed by then).
pub(crate) fn cdfs(
    title: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<String, ReportError> {
    let series: Vec<Line> = series
        .iter()
        .enumerate()
        .map(|(i, (name, pts))| Line {
            name: name.clone(),
            pts: pts.clone(),
            dashed: i >= COLOURS.len(),
        })
        .collect();
    lines(
        title,
        "completion time (s)",
        "share of requests completed",
        &series,
        true,
        SeriesLabelPosition::LowerRight,
    )
}

/// One node's row of an availability timeline.
pub struct TimelineRow {
    /// Node label.
    pub label: String,
    /// Observed window (x units).
    pub observed: (f64, f64),
    /// Up-sessions: start, end, and whether the end was an observed failure.
    pub up: Vec<(f64, f64, bool)>,
}

/// Node availability over time: per node, its observed window in grey, its up-sessions in
/// blue, and a red tick where a session ended by a failure (censored ends have none).
pub fn timeline(title: &str, x_desc: &str, rows: &[TimelineRow]) -> Result<String, ReportError> {
    let xmax = rows
        .iter()
        .map(|r| r.observed.1)
        .chain(rows.iter().flat_map(|r| r.up.iter().map(|u| u.1)))
        .fold(0.0f64, f64::max)
        .max(1e-6);
    let n = rows.len().max(1);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (SIZE.0, 90 + 18 * n as u32)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let labels: Vec<String> = rows.iter().map(|r| r.label.clone()).collect();
        let mut chart = category_chart(&root, title, 0.0..xmax * 1.01, &labels, x_desc, "node")?;
        let grey = RGBColor(220, 220, 220);
        let (up, down) = (COLOURS[0], COLOURS[3]);
        for (i, r) in rows.iter().enumerate() {
            let y = i as f64;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(r.observed.0, y - 0.12), (r.observed.1, y + 0.12)],
                    grey.filled(),
                )))
                .map_err(err)?;
            chart
                .draw_series(
                    r.up.iter().map(|&(a, b, _)| {
                        Rectangle::new([(a, y - 0.32), (b, y + 0.32)], up.filled())
                    }),
                )
                .map_err(err)?;
            chart
                .draw_series(r.up.iter().filter(|u| u.2).map(|&(_, b, _)| {
                    PathElement::new(vec![(b, y - 0.45), (b, y + 0.45)], down.stroke_width(2))
                }))
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// How a heatmap cell reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sign {
    /// Hazard better, interval excludes 0.
    Better,
    /// Hazard worse, interval excludes 0.
    Worse,
    /// Interval contains 0.
    Tie,
    /// No value.
    Missing,
}

/// The regime map: rows x columns of cells marked by sign, with their labels.
pub(crate) fn heatmap(
    title: &str,
    x_desc: &str,
    rows: &[String],
    columns: &[String],
    cells: &[Vec<(Sign, String)>],
) -> Result<String, ReportError> {
    let (nr, nc) = (rows.len().max(1), columns.len().max(1));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(
            &mut svg,
            (SIZE.0.max(200 + 90 * nc as u32), 90 + 22 * nr as u32),
        )
        .into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let top_down: Vec<String> = rows.iter().rev().cloned().collect();
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(260)
            .build_cartesian_2d(-0.5f64..(nc as f64 - 0.5), -0.5f64..(nr as f64 - 0.5))
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(x_desc)
            .y_desc("cell (other axes)")
            .x_labels(nc)
            .y_labels(nr)
            .x_label_formatter(&|x| category(columns, *x))
            // Row 0 at the top.
            .y_label_formatter(&|y| category(&top_down, *y))
            .draw()
            .map_err(err)?;
        for (r, row) in cells.iter().enumerate() {
            for (c, (sign, text)) in row.iter().enumerate() {
                let colour = match sign {
                    Sign::Better => RGBColor(77, 175, 74),
                    Sign::Worse => RGBColor(228, 26, 28),
                    Sign::Tie => RGBColor(220, 220, 220),
                    Sign::Missing => WHITE,
                };
                let y = (nr - 1 - r) as f64;
                let x = c as f64;
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(x - 0.48, y - 0.45), (x + 0.48, y + 0.45)],
                        colour.filled(),
                    )))
                    .map_err(err)?;
                chart
                    .draw_series(std::iter::once(Text::new(
                        text.clone(),
                        (x - 0.4, y + 0.2),
                        ("sans-serif", 11),
                    )))
                    .map_err(err)?;
            }
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}
