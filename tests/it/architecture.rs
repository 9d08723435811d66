//! Data flows one way: `ingest -> store -> survival -> fit -> policy -> replay -> scenario ->
//! cli | tui | report`. These tests read the library's sources and fail when a module imports
//! one of a higher layer, or when two files of one module import each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Layer of each top-level module of `src/`: a module may import only modules of a lower
/// layer (or itself). Utilities sit at the bottom, front ends at the top.
const LAYERS: &[(&str, u32)] = &[
    ("rng", 0),
    ("diag", 0),
    ("public", 0),
    ("store", 1),
    ("queries", 2),
    ("named_queries", 2),
    ("survival", 2),
    ("fit", 3),
    ("policy", 4),
    ("replay", 5),
    ("synth", 6),
    ("scenario", 6),
    ("output", 7),
    ("sweep", 7),
    ("report", 8),
    ("tui", 8),
    ("cli", 9),
];

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The top-level module a file belongs to (`src/replay/engine.rs` -> `replay`).
fn module_of(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src()).ok()?;
    let first = rel
        .components()
        .next()?
        .as_os_str()
        .to_string_lossy()
        .to_string();
    Some(first.trim_end_matches(".rs").to_string())
}

/// Code without comments (line comments and doc comments), so prose naming a module does not
/// count as an import.
fn code(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::NAME` path in `text`, including grouped `use crate::{a, b::c}`.
fn crate_refs(text: &str) -> BTreeSet<String> {
    path_refs(text, "crate::")
}

/// The first segment after every `prefix` (`crate::`, `super::`) in `text`, with groups.
fn path_refs(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find(prefix) {
        let after = &rest[i + prefix.len()..];
        let prev = rest[..i].chars().last();
        let word_start = !prev.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
        if word_start {
            if let Some(group) = after.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for part in group[..end].split(',') {
                    let name: String = part
                        .trim()
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() {
                        out.insert(name);
                    }
                }
            } else {
                let name: String = after
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        }
        rest = after;
    }
    out
}

#[test]
fn no_module_imports_a_higher_layer() {
    let layers: BTreeMap<&str, u32> = LAYERS.iter().copied().collect();
    let mut files = Vec::new();
    rs_files(&src(), &mut files);
    assert!(files.len() > 20, "found only {} source files", files.len());
    let mut violations = Vec::new();
    for f in &files {
        let Some(m) = module_of(f) else { continue };
        if m == "lib" || m == "main" {
            continue;
        }
        let Some(&own) = layers.get(m.as_str()) else {
            violations.push(format!(
                "{}: module {m} has no layer in LAYERS",
                f.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(f).unwrap_or_default();
        for r in crate_refs(&code(&text)) {
            if r == m {
                continue;
            }
            match layers.get(r.as_str()) {
                Some(&l) if l < own => {}
                Some(&l) => violations.push(format!(
                    "{}: {m} (layer {own}) imports crate::{r} (layer {l})",
                    f.display()
                )),
                None => {} // crate-root items (re-exports such as `crate::ingest`)
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

#[test]
fn no_two_files_of_a_module_import_each_other() {
    // Sibling files (not the module's mod.rs facade) that name each other via `super::X` or
    // `crate::m::X` form a cycle.
    let mut files = Vec::new();
    rs_files(&src(), &mut files);
    let stem = |p: &Path| p.file_stem().map(|s| s.to_string_lossy().to_string());
    let mut edges: BTreeSet<(PathBuf, PathBuf)> = BTreeSet::new();
    for f in &files {
        if stem(f).as_deref() == Some("mod") {
            continue;
        }
        let Some(dir) = f.parent() else { continue };
        let text = code(&std::fs::read_to_string(f).unwrap_or_default());
        let module_path = dir
            .strip_prefix(src())
            .map(|p| p.to_string_lossy().replace('/', "::"))
            .unwrap_or_default();
        for g in &files {
            if g == f || g.parent() != Some(dir) || stem(g).as_deref() == Some("mod") {
                continue;
            }
            let Some(name) = stem(g) else { continue };
            let via_super = path_refs(&text, "super::").contains(&name);
            let via_crate =
                !module_path.is_empty() && text.contains(&format!("crate::{module_path}::{name}"));
            if via_super || via_crate {
                edges.insert((f.clone(), g.clone()));
            }
        }
    }
    let cycles: Vec<String> = edges
        .iter()
        .filter(|(a, b)| a < b && edges.contains(&(b.clone(), a.clone())))
        .map(|(a, b)| format!("{} <-> {}", a.display(), b.display()))
        .collect();
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_checker_sees_grouped_and_plain_imports() {
    let refs = crate_refs(
        "use crate::{store::Store, survival};\nlet x = crate::policy::Params::default();",
    );
    assert_eq!(
        refs.into_iter().collect::<Vec<_>>(),
        vec!["policy", "store", "survival"]
    );
    assert!(crate_refs(&code("// see crate::cli for the front end")).is_empty());
    let sup = path_refs("use super::{app::App, data::{Job, Loaded}};", "super::");
    assert!(sup.contains("app") && sup.contains("data"), "{sup:?}");
}

#[test]
fn long_files_say_why_they_are_one_concept() {
    let mut files = Vec::new();
    rs_files(&src(), &mut files);
    rs_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("ingest/src"),
        &mut files,
    );
    let mut unexplained = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        let lines = text.lines().count();
        let opening: Vec<&str> = text.lines().take_while(|l| l.starts_with("//!")).collect();
        if lines > 800 && !opening.iter().any(|l| l.starts_with("//! Size: ")) {
            unexplained.push(format!("{} ({lines} lines)", f.display()));
        }
    }
    assert!(
        unexplained.is_empty(),
        "files over 800 lines without a `//! Size:` reason in their opening comment:\n{}",
        unexplained.join("\n")
    );
}
