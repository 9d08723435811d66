//! The frame: tabs on top, the current screen, a status line, and the key help on request.
//! [`view`] is pure: it reads the [`App`] and draws, nothing else.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Tabs};
use ratatui::Frame;

use super::app::App;
use super::screens;
use super::widgets::{block, centered, dim, header_style};

/// Spinner frames.
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// Smallest terminal the layout is designed for.
pub const MIN_SIZE: (u16, u16) = (60, 16);

/// Draws the whole frame.
pub fn view(app: &App, f: &mut Frame) {
    let area = f.area();
    if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
        let p = Paragraph::new(vec![
            Line::from("hazardserve tui"),
            Line::from(format!(
                "The terminal is {}x{}; enlarge it to at least {}x{}.",
                area.width, area.height, MIN_SIZE.0, MIN_SIZE.1
            )),
            Line::from("q quits."),
        ]);
        f.render_widget(p, area);
        return;
    }
    let [tabs, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    render_tabs(app, f, tabs);
    screens::get(app.screen).render(app, f, body);
    render_status(app, f, status);
    if app.help {
        render_help(app, f, body);
    }
    if app.no_color {
        strip_colour(f.buffer_mut());
    }
}

/// `NO_COLOR`: every cell in the terminal's own colours; what a background colour marked (the
/// selected row, the active tab) is shown reversed instead. Curves and map cells stay apart by
/// their markers.
fn strip_colour(buf: &mut ratatui::buffer::Buffer) {
    for cell in buf.content.iter_mut() {
        if cell.bg != Color::Reset {
            cell.modifier.insert(Modifier::REVERSED);
        }
        cell.fg = Color::Reset;
        cell.bg = Color::Reset;
    }
}

fn render_tabs(app: &App, f: &mut Frame, area: Rect) {
    let titles: Vec<Line> = screens::REGISTRY
        .iter()
        .enumerate()
        .map(|(i, s)| Line::from(format!("{} {}", i + 1, s.title())))
        .collect();
    let tabs = Tabs::new(titles)
        .select(screens::index(app.screen))
        .style(dim())
        .highlight_style(
            Style::default()
                .fg(Color::Black)
                .bg(Color::Cyan)
                .add_modifier(Modifier::BOLD),
        )
        .divider("│")
        .padding(" ", " ");
    let brand = " hazardserve ";
    let [left, right] =
        Layout::horizontal([Constraint::Length(brand.len() as u16), Constraint::Min(0)])
            .areas(area);
    if area.width >= 84 {
        f.render_widget(Paragraph::new(Span::styled(brand, header_style())), left);
        f.render_widget(tabs, right);
    } else {
        f.render_widget(tabs, area);
    }
}

fn render_status(app: &App, f: &mut Frame, area: Rect) {
    let screen = screens::get(app.screen);
    let list = screen.list();
    let mut left: Vec<Span> = Vec::new();
    if let Some(buf) = &app.input {
        left.push(Span::styled("filter: ", header_style()));
        left.push(Span::raw(format!("{buf}▏")));
        left.push(Span::styled("  Enter keep · Esc clear", dim()));
    } else if let Some(n) = &app.notice {
        left.push(Span::styled(n.clone(), Style::default().fg(Color::Cyan)));
    } else {
        let filter = app.filter(list);
        if !filter.is_empty() {
            left.push(Span::styled(
                format!("/{filter} "),
                Style::default().fg(Color::Cyan),
            ));
        }
        left.push(Span::styled(screen.hints(app), dim()));
    }
    let right = app.in_flight.first().map(|job| {
        let frame = SPINNER[(app.tick as usize) % SPINNER.len()];
        let more = app.in_flight.len().saturating_sub(1);
        let mut text = format!("{frame} {}", job.describe());
        if more > 0 {
            text.push_str(&format!(" (+{more})"));
        }
        text
    });
    let right_w = right
        .as_ref()
        .map_or(0, |t| (t.chars().count() as u16 + 1).min(area.width / 2));
    let [l, r] = Layout::horizontal([Constraint::Min(0), Constraint::Length(right_w)]).areas(area);
    f.render_widget(Paragraph::new(Line::from(left)), l);
    if let Some(t) = right {
        f.render_widget(
            Paragraph::new(Span::styled(t, Style::default().fg(Color::Cyan))),
            r,
        );
    }
}

/// The key help, by screen.
fn help_lines(app: &App) -> Vec<Line<'static>> {
    let key = |k: &str, what: &str| {
        Line::from(vec![
            Span::styled(format!("{k:>14}  "), header_style()),
            Span::raw(what.to_string()),
        ])
    };
    let mut lines = vec![
        key("Tab / S-Tab", "next / previous screen"),
        key(
            &format!("1 … {}", screens::REGISTRY.len().min(9)),
            &screens::REGISTRY
                .iter()
                .map(|s| s.title())
                .collect::<Vec<_>>()
                .join(" "),
        ),
        key("j k ↓ ↑", "move (PgDn PgUp: 10 rows, g G: first, last)"),
        key(
            "Enter → l",
            "drill down (source → nodes → survival → trigger)",
        ),
        key("h ← Bksp", "back up"),
        key("/", "filter the list (Enter keeps, Esc clears)"),
        key("s  S", "sort by the next column / reverse the order"),
        key("r", "reload the store (after an ingest, replay or sweep)"),
        key("?", "this help (any key closes it)"),
        key("q Esc Ctrl-C", "quit (Esc clears a filter first)"),
    ];
    for (k, what) in screens::get(app.screen).help() {
        lines.push(key(k, what));
    }
    lines.push(Line::default());
    lines.push(Line::from(Span::styled(
        "Loading runs off the render path; a spinner (bottom right) shows it.",
        dim(),
    )));
    lines
}

fn render_help(app: &App, f: &mut Frame, body: Rect) {
    let lines = help_lines(app);
    let h = lines.len() as u16 + 2;
    let area = centered(body, 76, h);
    f.render_widget(Clear, area);
    f.render_widget(
        Paragraph::new(lines)
            .block(block(" Keys "))
            .wrap(ratatui::widgets::Wrap { trim: false }),
        area,
    );
}
