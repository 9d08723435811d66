//! The report as a document: its blocks, and their Markdown and HTML renderings.

use std::path::{Path, PathBuf};

use super::error::ReportError;

/// One piece of the report.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A section heading.
    Heading(String),
    /// A paragraph.
    Text(String),
    /// A table: header and rows.
    Table(Vec<String>, Vec<Vec<String>>),
    /// A plot: file name, SVG text, caption.
    Plot(String, String, String),
}

/// A built report.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Its blocks, in order.
    pub blocks: Vec<Block>,
}

/// A source name as a file name (it is already restricted; this keeps the report robust).
pub(crate) fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The inline Markdown a report writes, as HTML: code spans (`x`) and strong emphasis
/// (`**x**`, outside code spans; an unpaired `**` stays as written).
fn html_text(s: &str) -> String {
    let mut out = String::new();
    for (i, part) in html_escape(s).split('`').enumerate() {
        if i % 2 == 1 {
            out.push_str(&format!("<code>{part}</code>"));
            continue;
        }
        let pieces: Vec<&str> = part.split("**").collect();
        for (j, piece) in pieces.iter().enumerate() {
            // Pieces between a pair of markers are strong; a last odd marker has no pair.
            let paired = j % 2 == 1 && j + 1 < pieces.len();
            match (j % 2 == 1, paired) {
                (true, true) => out.push_str(&format!("<strong>{piece}</strong>")),
                (true, false) => out.push_str(&format!("**{piece}")),
                _ => out.push_str(piece),
            }
        }
    }
    out
}

impl Report {
    /// The Markdown text (plots as image links to their SVG files).
    pub fn markdown(&self) -> String {
        let mut md = String::from("# hazardserve report\n\n");
        for b in &self.blocks {
            match b {
                Block::Heading(h) => md.push_str(&format!("## {h}\n\n")),
                Block::Text(t) => md.push_str(&format!("{t}\n\n")),
                Block::Table(head, rows) => {
                    md.push_str(&format!(
                        "| {} |\n|{}\n",
                        head.iter()
                            .map(|h| md_escape(h))
                            .collect::<Vec<_>>()
                            .join(" | "),
                        "---|".repeat(head.len())
                    ));
                    for row in rows {
                        md.push_str(&format!(
                            "| {} |\n",
                            row.iter()
                                .map(|c| md_escape(c))
                                .collect::<Vec<_>>()
                                .join(" | ")
                        ));
                    }
                    md.push('\n');
                }
                Block::Plot(file, _, caption) => md.push_str(&format!("![{caption}]({file})\n\n")),
            }
        }
        md
    }

    /// One self-contained HTML page (inline SVG, no script, no network).
    pub fn html(&self) -> String {
        let mut h = String::from(
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <title>hazardserve report</title><style>body{font-family:sans-serif;max-width:1000px;\
             margin:2em auto;padding:0 1em}table{border-collapse:collapse;margin:1em 0}\
             td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}\
             figure{margin:1em 0}figcaption{color:#555}</style></head><body>\n\
             <h1>hazardserve report</h1>\n",
        );
        for b in &self.blocks {
            match b {
                Block::Heading(t) => h.push_str(&format!("<h2>{}</h2>\n", html_escape(t))),
                Block::Text(t) => h.push_str(&format!("<p>{}</p>\n", html_text(t))),
                Block::Table(head, rows) => {
                    h.push_str("<table><tr>");
                    for c in head {
                        h.push_str(&format!("<th>{}</th>", html_escape(c)));
                    }
                    h.push_str("</tr>\n");
                    for row in rows {
                        h.push_str("<tr>");
                        for c in row {
                            h.push_str(&format!("<td>{}</td>", html_text(c)));
                        }
                        h.push_str("</tr>\n");
                    }
                    h.push_str("</table>\n");
                }
                Block::Plot(_, svg, caption) => h.push_str(&format!(
                    "<figure>{svg}<figcaption>{}</figcaption></figure>\n",
                    html_escape(caption)
                )),
            }
        }
        h.push_str("</body></html>\n");
        h
    }

    /// Writes `report.md`, `report.html` and the SVG files into `dir` (created when missing);
    /// returns the files written.
    pub fn write(&self, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ReportError::Io { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let mut written = Vec::new();
        let mut put = |name: &str, text: &str| -> Result<(), ReportError> {
            let p = dir.join(name);
            crate::store::write_atomic(&p, text.as_bytes()).map_err(|e| ReportError::Io {
                path: p.clone(),
                source: std::io::Error::other(e.to_string()),
            })?;
            written.push(p);
            Ok(())
        };
        for b in &self.blocks {
            if let Block::Plot(file, svg, _) = b {
                put(file, svg)?;
            }
        }
        put("report.md", &self.markdown())?;
        put("report.html", &self.html())?;
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::html_text;

    #[test]
    fn html_renders_the_inline_markdown_of_a_report() {
        assert_eq!(html_text("**decreasing**"), "<strong>decreasing</strong>");
        assert_eq!(
            html_text("a `x**y` and **b** < c"),
            "a <code>x**y</code> and <strong>b</strong> &lt; c"
        );
        // An unpaired marker stays as written.
        assert_eq!(html_text("2**3 and **x"), "2<strong>3 and </strong>x");
        assert_eq!(html_text("only **one"), "only **one");
    }
}
