//! A screen and an ingest adapter are each added in one place: their own file plus one
//! registry line (CONTRIBUTING.md's recipes). These tests read the sources and fail when some
//! other file names a screen's or an adapter's module, when code outside the registry matches
//! on screens, or when the registry and the files disagree; and they check the registries at
//! run time (unique names, every parent and child screen registered).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use hazardserve::tui::app::Screen;
use hazardserve::tui::screens;
use hazardserve_ingest::{Format, InputFormat};

use super::common::rs_files;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The module files of a registry folder (not `mod.rs`, not `*_tests.rs`, not `skip`).
fn members(dir: &Path, skip: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let stem = name.strip_suffix(".rs")?.to_string();
            (stem != "mod" && !stem.ends_with("_tests") && !skip.contains(&stem.as_str()))
                .then_some(stem)
        })
        .collect();
    out.sort();
    out
}

/// Lines of code (comments dropped) that mention `needle`, across `files`, except in `own`.
fn mentions(files: &[PathBuf], needle: &str, own: &[PathBuf]) -> Vec<String> {
    let mut hits = Vec::new();
    for f in files {
        if own.contains(f) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains(needle) {
                hits.push(format!("{}:{}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    hits
}

/// The text without its comments.
fn code(text: &str) -> String {
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// How many times `word` appears in `text` as a whole identifier.
fn count_word(text: &str, word: &str) -> usize {
    let b = text.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    text.match_indices(word)
        .filter(|(i, _)| {
            let before = i.checked_sub(1).map(|j| b[j]);
            let after = b.get(i + word.len()).copied();
            !before.is_some_and(ident) && !after.is_some_and(ident)
        })
        .count()
}

#[test]
fn a_screen_is_its_file_and_one_registry_line() {
    let dir = root().join("src/tui/screens");
    let registry = code(&std::fs::read_to_string(dir.join("mod.rs")).unwrap());
    let names = members(&dir, &[]);
    assert_eq!(names.len(), screens::REGISTRY.len(), "{names:?}");
    let mut all = Vec::new();
    rs_files(&root().join("src"), &mut all);
    rs_files(&root().join("benches"), &mut all);
    for name in &names {
        // In the registry file: `mod NAME;` and `&NAME::Type,` and nothing else.
        assert_eq!(
            count_word(&registry, name),
            2,
            "screens/mod.rs names `{name}` other than in `mod {name};` and its REGISTRY line"
        );
        assert!(registry.contains(&format!("mod {name};")), "{name}");
        // No other file names the screen's module.
        let own = vec![dir.join(format!("{name}.rs")), dir.join("mod.rs")];
        let hits = mentions(&all, &format!("screens::{name}"), &own);
        assert!(
            hits.is_empty(),
            "{name} is named outside its file:\n{}",
            hits.join("\n")
        );
    }
    // Outside the screens folder nothing matches on a screen: the frame, the keys and the
    // loads reach screens through the registry's functions only.
    let mut tui = Vec::new();
    rs_files(&root().join("src/tui"), &mut tui);
    let outside: Vec<PathBuf> = tui.into_iter().filter(|f| !f.starts_with(&dir)).collect();
    // (The one exception: the screen the TUI opens on, `Screen::HOME`, tested below to be the
    // registry's first.)
    let literals: Vec<String> = mentions(&outside, "Screen(\"", &[])
        .into_iter()
        .filter(|l| !l.contains("pub const HOME: Screen"))
        .collect();
    assert!(
        literals.is_empty(),
        "screens named outside src/tui/screens:\n{}",
        literals.join("\n")
    );
    let mut uses = BTreeSet::new();
    for f in &outside {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for (i, _) in text.match_indices("screens::") {
            let rest: String = text[i + "screens::".len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            uses.insert(rest);
        }
    }
    let allowed: BTreeSet<String> = ["REGISTRY", "get", "index", "all"]
        .into_iter()
        .map(String::from)
        .collect();
    assert!(
        uses.is_subset(&allowed),
        "the TUI reaches screens other than through the registry: {uses:?}"
    );
}

#[test]
fn the_screen_registry_is_consistent() {
    let ids: Vec<Screen> = screens::all();
    let unique: BTreeSet<&str> = ids.iter().map(|s| s.0).collect();
    assert_eq!(unique.len(), ids.len(), "duplicate screen ids: {ids:?}");
    let titles: BTreeSet<&str> = screens::REGISTRY.iter().map(|s| s.title()).collect();
    assert_eq!(titles.len(), ids.len());
    assert_eq!(ids[0], Screen::HOME, "the TUI opens on the first tab");
    for s in screens::REGISTRY {
        for link in [s.parent(), s.child()].into_iter().flatten() {
            assert!(
                ids.contains(&link),
                "{} links to the unregistered screen {link:?}",
                s.title()
            );
        }
        assert_eq!(screens::get(s.id()).title(), s.title());
        assert!(!s.hints(&hazardserve::tui::app::App::new(None)).is_empty());
    }
}

#[test]
fn an_adapter_is_its_file_and_one_registry_line() {
    let dir = root().join("ingest/src/adapters");
    let registry = code(&std::fs::read_to_string(dir.join("mod.rs")).unwrap());
    let names = members(&dir, &["format"]);
    assert_eq!(names.len(), Format::all().count(), "{names:?}");
    let mut all = Vec::new();
    rs_files(&root().join("src"), &mut all);
    rs_files(&root().join("ingest/src"), &mut all);
    rs_files(&root().join("benches"), &mut all);
    for name in &names {
        assert_eq!(
            count_word(&registry, name),
            2,
            "adapters/mod.rs names `{name}` other than in `pub mod {name};` and its ADAPTERS line"
        );
        assert!(registry.contains(&format!("{name}::FORMAT,")), "{name}");
        // Its parser and sniffer are reached through the table only.
        let own = vec![
            dir.join(format!("{name}.rs")),
            dir.join(format!("{name}_tests.rs")),
        ];
        for f in ["parse", "sniff"] {
            let hits = mentions(&all, &format!("{name}::{f}"), &own);
            assert!(
                hits.is_empty(),
                "{name}::{f} is called outside the table:\n{}",
                hits.join("\n")
            );
        }
    }
    // The command line keeps no list of formats: `--format` is parsed from the crate's.
    let cli = std::fs::read_to_string(root().join("src/cli/ingest.rs")).unwrap();
    for f in Format::all() {
        assert!(
            !cli.contains(&format!("\"{}\"", f.name())),
            "src/cli/ingest.rs spells the format {} itself",
            f.name()
        );
    }
}

#[test]
fn the_adapter_registry_is_consistent() {
    let names: Vec<&str> = Format::all().map(Format::name).collect();
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    for f in Format::all() {
        assert_eq!(Format::from_name(f.name()), Some(f));
        assert_eq!(
            InputFormat::from_name(f.name()),
            Some(InputFormat::Trace(f))
        );
        assert!(!f.about().is_empty());
    }
    let every: Vec<&str> = InputFormat::all().iter().map(|f| f.name()).collect();
    let unique: BTreeSet<&str> = every.iter().copied().collect();
    assert_eq!(unique.len(), every.len(), "{every:?}");
    assert_eq!(InputFormat::from_name("auto"), Some(InputFormat::Auto));
    assert_eq!(InputFormat::from_name("nope"), None);
}
