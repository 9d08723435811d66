//! The front page and the book: README.md stays a front page (at most 250 lines, the two set-up
//! commands verbatim); the book under `docs/` builds with mdBook without a warning, every
//! internal link and anchor of the built pages (and of the README's links into the book)
//! resolves, every page is in SUMMARY.md, and the command-line reference is the binary's own.
//! The `sh` blocks of the pages are run by `cli_examples`, the result tables made again by
//! `result_tables`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{book_order, doc_pages, files_with_extension, hs, md_links, ok, skip};

/// The longest the front page may be.
const README_MAX_LINES: usize = 250;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_front_page_is_short_and_has_the_two_set_up_commands_verbatim() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines; the front page keeps to {README_MAX_LINES} (the rest \
         belongs in a page of docs/src)"
    );
    assert!(
        readme.contains("```sh\ncargo run --release -- demo\n```"),
        "the demo command, verbatim, in a sh block"
    );
    // CI reads the test command from the line after the marker.
    let after_marker = readme
        .split("<!-- test-command -->\n")
        .nth(1)
        .and_then(|r| r.lines().next())
        .map(str::trim);
    assert_eq!(after_marker, Some("cargo test --release --workspace"));
}

#[test]
fn every_page_of_the_book_is_in_the_summary() {
    let listed: BTreeSet<PathBuf> = book_order(root()).into_iter().collect();
    let src = root().join("docs/src");
    for (path, _) in doc_pages(root()) {
        if !path.starts_with(&src) || path.ends_with("SUMMARY.md") {
            continue;
        }
        assert!(
            listed.contains(&path),
            "{} is not listed in docs/src/SUMMARY.md, so mdBook would leave it out",
            path.display()
        );
    }
    for path in &listed {
        assert!(path.exists(), "SUMMARY.md lists {}", path.display());
    }
}

/// The runner of `sh` blocks (`cli_examples`) sees a block only when its fence starts at the
/// margin: every fenced block of the README and the book does, with a language it knows
/// (`sh` runs; the others are shown), and `{{#include}}` pulls in only the README's tour and
/// CONTRIBUTING.md, whose commands are run from those files.
#[test]
fn every_code_block_is_fenced_at_the_margin_with_a_known_language() {
    const KNOWN: [&str; 5] = ["sh", "text", "toml", "python", "sql"];
    let mut fences = 0;
    for (path, text) in doc_pages(root()) {
        let mut open = false;
        for (n, line) in text.lines().enumerate() {
            let at = format!("{}:{}", path.display(), n + 1);
            let trimmed = line.trim_start();
            if trimmed.starts_with("~~~") || (trimmed.starts_with("```") && line != trimmed) {
                panic!("{at}: a fence that does not start at the margin, or with ~~~: {line:?}");
            }
            if let Some(info) = line.strip_prefix("```") {
                if !open {
                    assert!(
                        KNOWN.contains(&info),
                        "{at}: code block language {info:?} (one of {KNOWN:?})"
                    );
                    fences += 1;
                }
                open = !open;
            }
            if line.contains("{{#include") {
                assert!(
                    line.contains("README.md:tour") || line.contains("CONTRIBUTING.md"),
                    "{at}: an include the sh-block runner does not read: {line}"
                );
            }
        }
        assert!(!open, "{}: a code block is not closed", path.display());
    }
    assert!(fences >= 50, "only {fences} code blocks");
}

/// The reference is `hazardserve man --markdown`, byte for byte; `HAZARDSERVE_BLESS=1` writes
/// it. A flag added without regenerating fails here.
#[test]
fn the_cli_reference_is_the_binarys_own() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = hs(&tmp.path().join("store"));
    c.args(["man", "--markdown"]);
    let fresh = ok(c);
    let path = root().join("docs/src/reference/cli.md");
    if std::env::var_os("HAZARDSERVE_BLESS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != fresh {
        let first = committed
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(committed.lines().count().min(fresh.lines().count()));
        panic!(
            "docs/src/reference/cli.md is not the binary's reference (first difference at line \
             {}): regenerate it with `hazardserve man --markdown > docs/src/reference/cli.md` \
             (or HAZARDSERVE_BLESS=1)\n--- committed\n{}\n--- binary\n{}",
            first + 1,
            committed.lines().nth(first).unwrap_or("(end)"),
            fresh.lines().nth(first).unwrap_or("(end)")
        );
    }
    // Every command of the binary has its section.
    for (cmd, _) in crate::common::help_tree() {
        let name = std::iter::once("hazardserve")
            .chain(cmd.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let heading = format!("\n## {name}\n");
        assert!(fresh.contains(&heading), "no section {heading:?}");
    }
}

/// mdBook's binary: where `cargo install` puts it (`.ci/run` installs the pinned version
/// there), else on the `PATH`.
fn mdbook() -> Option<PathBuf> {
    let runs = |p: &Path| {
        Command::new(p)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")));
    if let Some(bin) = cargo_home.map(|h| h.join("bin/mdbook")) {
        if runs(&bin) {
            return Some(bin);
        }
    }
    if runs(Path::new("mdbook")) {
        return Some(PathBuf::from("mdbook"));
    }
    skip("mdbook is not installed (cargo install mdbook --version 0.5.4 --locked; .ci/run installs it)");
    None
}

/// `%XX` escapes decoded (mdBook writes some anchors and paths escaped).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let hex = |c: u8| (c as char).to_digit(16);
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The values of every `attr="..."` in `html`.
fn attr_values<'a>(html: &'a str, attr: &str) -> Vec<&'a str> {
    let pat = format!(" {attr}=\"");
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find(&pat) {
        let after = &rest[i + pat.len()..];
        let Some(end) = after.find('"') else { break };
        out.push(&after[..end]);
        rest = &after[end..];
    }
    out
}

/// The broken internal links of the built book in `out` (`(page, link, why)`), and how many
/// links with a fragment (an anchor) were checked.
fn broken_links(out: &Path) -> (Vec<(String, String, String)>, usize) {
    let mut pages = Vec::new();
    files_with_extension(out, "html", &mut pages);
    let ids: BTreeMap<PathBuf, BTreeSet<String>> = pages
        .iter()
        .map(|p| {
            let html = std::fs::read_to_string(p).unwrap();
            let ids = attr_values(&html, "id")
                .into_iter()
                .map(percent_decode)
                .collect();
            (p.clone(), ids)
        })
        .collect();
    let mut broken = Vec::new();
    let mut anchors = 0;
    for page in &pages {
        let html = std::fs::read_to_string(page).unwrap();
        let rel = page.strip_prefix(out).unwrap().display().to_string();
        // mdBook's not-found page links to the site's root (`site-url`), which is where the
        // book is served from, not a file of it.
        if rel == "404.html" {
            continue;
        }
        for link in attr_values(&html, "href")
            .into_iter()
            .chain(attr_values(&html, "src"))
        {
            if link.contains("://")
                || link.starts_with("//")
                || link.starts_with("mailto:")
                || link.starts_with("javascript:")
                || link.starts_with("data:")
            {
                continue;
            }
            let (path_part, fragment) = match link.split_once('#') {
                Some((p, f)) => (p, Some(percent_decode(f))),
                None => (link, None),
            };
            let path_part = path_part.split('?').next().unwrap_or("");
            let target = if path_part.is_empty() {
                page.clone()
            } else {
                let joined = page.parent().unwrap().join(percent_decode(path_part));
                // Normalise `..` without touching the file system.
                let mut norm = PathBuf::new();
                for c in joined.components() {
                    match c {
                        std::path::Component::ParentDir => {
                            norm.pop();
                        }
                        std::path::Component::CurDir => {}
                        c => norm.push(c),
                    }
                }
                if norm.is_dir() {
                    norm.join("index.html")
                } else {
                    norm
                }
            };
            if !target.starts_with(out) {
                broken.push((rel.clone(), link.to_string(), "leaves the book".into()));
                continue;
            }
            if !target.exists() {
                broken.push((rel.clone(), link.to_string(), "no such file".into()));
                continue;
            }
            if let Some(f) = fragment.filter(|f| !f.is_empty()) {
                anchors += 1;
                let has = ids.get(&target).is_some_and(|s| s.contains(&f));
                if !has {
                    broken.push((rel.clone(), link.to_string(), format!("no id {f:?}")));
                }
            }
        }
    }
    (broken, anchors)
}

#[test]
fn the_book_builds_without_warnings_and_every_internal_link_and_anchor_resolves() {
    let Some(mdbook) = mdbook() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("book");
    let run = Command::new(&mdbook)
        .arg("build")
        .arg(root().join("docs"))
        .arg("--dest-dir")
        .arg(&out)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.status.success(), "mdbook build docs failed:\n{log}");
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("WARN") || l.contains("ERROR") || l.contains("warning"))
        .collect();
    assert!(
        warnings.is_empty(),
        "mdbook build docs warned:\n{}",
        warnings.join("\n")
    );
    // Every page of SUMMARY.md was rendered.
    let src = root().join("docs/src");
    for page in book_order(root()) {
        let html = out.join(page.strip_prefix(&src).unwrap().with_extension("html"));
        assert!(html.exists(), "{} was not rendered", html.display());
    }
    let (broken, anchors) = broken_links(&out);
    // The pages' own cross-references and the reference's contents are checked, not only
    // the theme's links.
    assert!(
        anchors >= 100,
        "only {anchors} links with an anchor were checked"
    );
    assert!(
        broken.is_empty(),
        "{} broken internal links in the built book:\n{}",
        broken.len(),
        broken
            .iter()
            .map(|(p, l, why)| format!("{p}: {l} ({why})"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The README's links into the repository and the book resolve too.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for link in md_links(&readme) {
        if link.contains("://") {
            continue;
        }
        let (path, fragment) = link.split_once('#').unwrap_or((link, ""));
        let target = root().join(path);
        assert!(target.exists(), "README.md links to {link}: no such file");
        if !fragment.is_empty() {
            let page = target
                .strip_prefix(&src)
                .unwrap_or_else(|_| panic!("README.md: an anchor outside the book: {link}"));
            let html = std::fs::read_to_string(out.join(page.with_extension("html"))).unwrap();
            assert!(
                attr_values(&html, "id").contains(&fragment),
                "README.md links to {link}: the page has no such anchor"
            );
        }
    }
}

/// The checker itself: a missing page, a missing anchor and a link out of the book are each
/// found, and a good link is not.
#[test]
fn the_link_checker_finds_what_is_broken() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("book");
    std::fs::create_dir_all(out.join("sub")).unwrap();
    std::fs::write(
        out.join("index.html"),
        r##"<h1 id="top">x</h1><a href="sub/page.html#here">ok</a><a href="#top">ok</a>
<a href="missing.html">1</a><a href="sub/page.html#nowhere">2</a><a href="../outside.html">3</a>
<img src="sub/pic.svg"><a href="https://example.org/x#y">external</a>"##,
    )
    .unwrap();
    std::fs::write(out.join("sub/page.html"), r#"<h2 id="here">y</h2>"#).unwrap();
    let (broken, anchors) = broken_links(&out);
    assert_eq!(anchors, 3);
    let links: Vec<&str> = broken.iter().map(|b| b.1.as_str()).collect();
    assert_eq!(
        links,
        [
            "missing.html",
            "sub/page.html#nowhere",
            "../outside.html",
            "sub/pic.svg"
        ],
        "{broken:?}"
    );
}
