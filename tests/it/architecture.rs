//! The shape of the library, proven: every source file of `src/` (the crate root `lib.rs`
//! included) and of the pure stack's crate `core/src/` (which `src/lib.rs` re-exports under
//! the same paths; its own root only declares the modules and is left out) is a node of one
//! module graph, with an edge for every path that names another
//! file's module or an item in it (`crate::`, `super::`, `self::`, a child module or an imported
//! module by name; re-exports are followed to the file that defines the item). The tests fail on
//! any cycle of any length, inside or across folders, on any edge against the declared layer
//! order, on a pure-stack module that imports storage, on a dependency of the pure crate or of
//! the Python extension that is not theirs, and on a long file that does not say why it is one
//! concept. Synthetic trees show that the guard catches what it claims to.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::common::rs_files;

/// Layer of each top-level module of `src/` (`lib` is the crate root): a module may import
/// only modules of a strictly lower layer (or itself). Two stacks meet at `scenario`: the pure
/// one (`survival` -> `policy` -> `replay`) and the storage one (`store` -> `queries`, `fit`).
const LAYERS: &[(&str, u32)] = &[
    ("rng", 0),
    ("diag", 0),
    ("public", 0),
    ("survival", 1),
    ("store", 1),
    ("policy", 2),
    ("queries", 2),
    ("named_queries", 2),
    ("output", 2),
    ("ingest_job", 2),
    ("replay", 3),
    ("fit", 3),
    ("synth", 4),
    ("scenario", 4),
    ("sweep", 5),
    ("report", 6),
    ("tui", 6),
    ("cli", 7),
    ("lib", 8),
];

/// The pure stack: simulation and statistics without storage or I/O. Its modules import only
/// each other and the diagnostics helpers (`diag`: messages and name suggestions).
const PURE: &[&str] = &["rng", "survival", "policy", "replay"];
const PURE_MAY_ALSO: &[&str] = &["diag"];

/// A module path: `["store", "catalog"]` for `src/store/catalog.rs`, `["store"]` for
/// `src/store/mod.rs`, `[]` for `src/lib.rs`.
type ModPath = Vec<String>;

fn show(m: &[String]) -> String {
    if m.is_empty() {
        "crate root (lib.rs)".to_string()
    } else {
        m.join("::")
    }
}

/// Source text without comments, string literals and character literals (so prose or a
/// message naming a module is not an import).
fn code(text: &str) -> String {
    let b = text.as_bytes();
    let n = b.len();
    let mut out = String::with_capacity(n);
    let mut i = 0;
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    while i < n {
        let c = b[i];
        if text[i..].starts_with("//") {
            i = text[i..].find('\n').map_or(n, |j| i + j);
            continue;
        }
        if text[i..].starts_with("/*") {
            let mut depth = 0;
            while i < n {
                if text[i..].starts_with("/*") {
                    depth += 1;
                    i += 2;
                } else if text[i..].starts_with("*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
            continue;
        }
        // Raw strings: r"..", r#".."#, br"..".
        if (c == b'r' || c == b'b') && (i == 0 || !ident(b[i - 1])) {
            let mut j = i + usize::from(c == b'b');
            if j < n && b[j] == b'r' {
                j += 1;
                let hashes = b[j..].iter().take_while(|&&h| h == b'#').count();
                if j + hashes < n && b[j + hashes] == b'"' {
                    let close = format!("\"{}", "#".repeat(hashes));
                    let start = j + hashes + 1;
                    i = text[start..]
                        .find(&close)
                        .map_or(n, |k| start + k + close.len());
                    out.push_str("\"\"");
                    continue;
                }
            }
        }
        if c == b'"' {
            i += 1;
            while i < n && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
            continue;
        }
        if c == b'\'' {
            // A character literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            if i + 1 < n && b[i + 1] == b'\\' {
                i = text[i + 2..].find('\'').map_or(n, |k| i + 2 + k + 1);
                out.push_str("' '");
                continue;
            }
            let ch_len = text[i + 1..].chars().next().map_or(1, char::len_utf8);
            if i + 1 + ch_len < n && b[i + 1 + ch_len] == b'\'' {
                i += ch_len + 2;
                out.push_str("' '");
                continue;
            }
        }
        let ch_len = text[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&text[i..i + ch_len]);
        i += ch_len;
    }
    out
}

/// The path trees at `text[i..]` (`a::b::{c, d::e}` -> `[a,b,c]`, `[a,b,d,e]`), with the index
/// after them.
fn path_trees(text: &str, mut i: usize) -> (Vec<ModPath>, usize) {
    let b = text.as_bytes();
    if i < b.len() && b[i] == b'{' {
        i += 1;
        let mut all = Vec::new();
        loop {
            while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b',') {
                i += 1;
            }
            if i >= b.len() || b[i] == b'}' {
                return (all, i + 1);
            }
            let before = i;
            let (mut sub, next) = path_trees(text, i);
            all.append(&mut sub);
            i = next;
            // Skip what a tree does not consume (`as x`, `*`).
            while i < b.len() && !matches!(b[i], b',' | b'}') {
                i += 1;
            }
            if i == before {
                i += 1;
            }
        }
    }
    let name: String = text[i..]
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    if name.is_empty() {
        return (vec![Vec::new()], i);
    }
    i += name.len();
    if text[i..].starts_with("::") {
        let (subs, next) = path_trees(text, i + 2);
        let paths = subs
            .into_iter()
            .map(|mut s| {
                s.insert(0, name.clone());
                s
            })
            .collect();
        return (paths, next);
    }
    (vec![vec![name]], i)
}

/// Byte offsets where `word` starts a path (`word::`), not preceded by an identifier
/// character or `::`.
fn path_starts(text: &str, word: &str) -> Vec<usize> {
    let needle = format!("{word}::");
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(k) = text[from..].find(&needle) {
        let at = from + k;
        let prev = at.checked_sub(1).map(|p| b[p]);
        let free = !prev.is_some_and(|p| p.is_ascii_alphanumeric() || p == b'_' || p == b':');
        if free {
            out.push(at);
        }
        from = at + needle.len();
    }
    out
}

/// The module graph of a tree of sources.
#[derive(Debug, Default)]
struct ModuleGraph {
    /// Every file's module.
    files: BTreeSet<ModPath>,
    /// Edges: importer -> imported (file modules).
    edges: BTreeMap<ModPath, BTreeSet<ModPath>>,
}

/// The module of a file at `rel` (relative to `src/`), or `None` for a binary's root
/// (`main.rs`, `bin/*.rs`: each calls the library's entry point and nothing else).
fn module_path(rel: &str) -> Option<ModPath> {
    let stem = rel.strip_suffix(".rs")?;
    let mut parts: Vec<String> = stem.split('/').map(str::to_string).collect();
    match parts.as_slice() {
        [only] if only == "lib" => return Some(Vec::new()),
        [only] if only == "main" => return None,
        [dir, _] if dir == "bin" => return None,
        _ => {}
    }
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    Some(parts)
}

impl ModuleGraph {
    /// Builds the graph of `sources`: (path relative to `src/`, text).
    fn build(sources: &[(String, String)]) -> ModuleGraph {
        let mods: Vec<(ModPath, String)> = sources
            .iter()
            .filter_map(|(rel, text)| Some((module_path(rel)?, code(text))))
            .collect();
        let files: BTreeSet<ModPath> = mods.iter().map(|(m, _)| m.clone()).collect();
        // Re-exports: module -> (name -> absolute path it names).
        let mut reexports: BTreeMap<ModPath, BTreeMap<String, ModPath>> = BTreeMap::new();
        let mut refs: BTreeMap<ModPath, Vec<ModPath>> = BTreeMap::new();
        for (m, text) in &mods {
            let mut body = String::new();
            let mut rest = text.as_str();
            // Split off `pub use ...;` statements: a facade, not a dependency of its own.
            while let Some(k) = find_pub_use(rest) {
                body.push_str(&rest[..k.0]);
                let stmt_end = rest[k.1..].find(';').map_or(rest.len(), |e| k.1 + e + 1);
                let stmt = &rest[k.1..stmt_end];
                let (trees, _) = path_trees(stmt, 0);
                for p in trees {
                    let Some(first) = p.first() else { continue };
                    let abs = absolute(&files, m, &p, first);
                    let last = p.last().cloned().unwrap_or_default();
                    let alias = stmt
                        .split(" as ")
                        .nth(1)
                        .filter(|_| stmt.matches(" as ").count() == 1 && !stmt.contains('{'))
                        .map(|a| a.trim().trim_end_matches(';').trim().to_string());
                    let key = alias.unwrap_or(last);
                    if let Some(abs) = abs {
                        reexports.entry(m.clone()).or_default().insert(key, abs);
                    } else {
                        // An external crate's item: resolvable names that lead nowhere.
                        reexports
                            .entry(m.clone())
                            .or_default()
                            .insert(key, vec!["<extern>".to_string()]);
                    }
                }
                rest = &rest[stmt_end..];
            }
            body.push_str(rest);
            let inline = inline_mods(&body);
            let mut out: Vec<ModPath> = Vec::new();
            for base in ["crate", "super", "self"] {
                for at in path_starts(&body, base) {
                    let mut i = at + base.len() + 2;
                    let mut ups = usize::from(base == "super");
                    while body[i..].starts_with("super::") {
                        ups += 1;
                        i += "super::".len();
                    }
                    let depth = inline.iter().filter(|(a, b)| *a < at && at < *b).count();
                    let (trees, _) = path_trees(&body, i);
                    for p in trees {
                        let full = match base {
                            "crate" => p,
                            "self" => [m.clone(), p].concat(),
                            _ => {
                                // `super` inside an inline `mod tests {}` names the file first.
                                let ups_file = ups.saturating_sub(depth);
                                let keep = m.len().saturating_sub(ups_file);
                                [m[..keep].to_vec(), p].concat()
                            }
                        };
                        out.push(full);
                    }
                }
            }
            // Names bound to modules: declared children (`mod x;`) and imported modules.
            let mut binds: BTreeMap<String, ModPath> = BTreeMap::new();
            for child in declared_children(&body) {
                binds.insert(child.clone(), [m.clone(), vec![child]].concat());
            }
            for p in &out {
                let p: ModPath = p.iter().filter(|s| *s != "self").cloned().collect();
                if let Some(last) = p.last() {
                    if files.contains(&p) {
                        binds.insert(last.clone(), p.clone());
                    }
                }
            }
            for (name, full) in &binds {
                for at in path_starts(&body, name) {
                    let (trees, _) = path_trees(&body, at + name.len() + 2);
                    for p in trees {
                        out.push([full.clone(), p].concat());
                    }
                }
            }
            refs.insert(m.clone(), out);
        }
        let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
        for (m, rs) in &refs {
            for r in rs {
                if let Some(target) = resolve(&files, &reexports, r, 0) {
                    if &target != m {
                        edges.entry(m.clone()).or_default().insert(target);
                    }
                }
            }
        }
        ModuleGraph { files, edges }
    }

    /// Reads every `.rs` file under each of `dirs` (paths relative to their directory: the
    /// directories are one crate's tree), leaving out each `skip` path.
    fn read(dirs: &[PathBuf], skip: &[&str]) -> ModuleGraph {
        let mut sources: Vec<(String, String)> = Vec::new();
        for dir in dirs {
            let mut paths = Vec::new();
            rs_files(dir, &mut paths);
            for p in &paths {
                let rel = p
                    .strip_prefix(dir)
                    .unwrap_or(p)
                    .to_string_lossy()
                    .replace('\\', "/");
                if skip.contains(
                    &p.strip_prefix(root())
                        .unwrap_or(p)
                        .to_string_lossy()
                        .as_ref(),
                ) {
                    continue;
                }
                sources.push((rel, std::fs::read_to_string(p).unwrap_or_default()));
            }
        }
        ModuleGraph::build(&sources)
    }

    /// The library as one tree: `src/` and the pure stack's crate `core/src/` (re-exported by
    /// `src/lib.rs` under the same paths; its own crate root only declares the modules).
    fn library() -> ModuleGraph {
        ModuleGraph::read(&[src(), core_src()], &["core/src/lib.rs"])
    }

    /// The strongly connected components with more than one file (Tarjan), each with one
    /// cycle through it spelled out.
    fn cycles(&self) -> Vec<String> {
        struct Tarjan<'a> {
            g: &'a ModuleGraph,
            index: BTreeMap<&'a ModPath, usize>,
            low: BTreeMap<&'a ModPath, usize>,
            stack: Vec<&'a ModPath>,
            on: BTreeSet<&'a ModPath>,
            comps: Vec<Vec<&'a ModPath>>,
        }
        impl<'a> Tarjan<'a> {
            fn visit(&mut self, v: &'a ModPath) {
                let i = self.index.len();
                self.index.insert(v, i);
                self.low.insert(v, i);
                self.stack.push(v);
                self.on.insert(v);
                for w in self.g.edges.get(v).into_iter().flatten() {
                    if !self.index.contains_key(w) {
                        self.visit(w);
                        let lw = self.low[w];
                        let lv = self.low.get_mut(v).expect("visited");
                        *lv = (*lv).min(lw);
                    } else if self.on.contains(w) {
                        let iw = self.index[w];
                        let lv = self.low.get_mut(v).expect("visited");
                        *lv = (*lv).min(iw);
                    }
                }
                if self.low[v] == self.index[v] {
                    let mut comp = Vec::new();
                    while let Some(w) = self.stack.pop() {
                        self.on.remove(w);
                        comp.push(w);
                        if w == v {
                            break;
                        }
                    }
                    if comp.len() > 1 {
                        self.comps.push(comp);
                    }
                }
            }
        }
        let mut t = Tarjan {
            g: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on: BTreeSet::new(),
            comps: Vec::new(),
        };
        for v in &self.files {
            if !t.index.contains_key(v) {
                t.visit(v);
            }
        }
        t.comps
            .into_iter()
            .map(|comp| {
                let set: BTreeSet<&ModPath> = comp.iter().copied().collect();
                format!(
                    "{} files: {}",
                    comp.len(),
                    self.one_cycle(&set)
                        .iter()
                        .map(|m| show(m))
                        .collect::<Vec<_>>()
                        .join(" -> ")
                )
            })
            .collect()
    }

    /// One cycle inside the component `set` (a shortest path back to its smallest file).
    fn one_cycle(&self, set: &BTreeSet<&ModPath>) -> Vec<ModPath> {
        let Some(&start) = set.iter().next() else {
            return Vec::new();
        };
        let mut prev: BTreeMap<&ModPath, &ModPath> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        while let Some(v) = queue.pop_front() {
            for w in self.edges.get(v).into_iter().flatten() {
                if !set.contains(w) {
                    continue;
                }
                if w == start {
                    let mut path = vec![start.clone()];
                    let mut at = v;
                    while at != start {
                        path.push(at.clone());
                        at = prev[at];
                    }
                    path.push(start.clone());
                    path.reverse();
                    return path;
                }
                if !prev.contains_key(w) {
                    prev.insert(w, v);
                    queue.push_back(w);
                }
            }
        }
        Vec::new()
    }

    /// Edges from one top-level module to another that break the layer order or the pure stack.
    fn layer_violations(&self) -> Vec<String> {
        let layers: BTreeMap<&str, u32> = LAYERS.iter().copied().collect();
        let top = |m: &ModPath| m.first().map_or("lib".to_string(), Clone::clone);
        let mut out = Vec::new();
        for m in &self.files {
            if !layers.contains_key(top(m).as_str()) {
                out.push(format!(
                    "{}: module {} has no layer in LAYERS",
                    show(m),
                    top(m)
                ));
            }
        }
        for (from, tos) in &self.edges {
            let (tf, lf) = (top(from), layers.get(top(from).as_str()).copied());
            for to in tos {
                let (tt, lt) = (top(to), layers.get(top(to).as_str()).copied());
                if tf == tt {
                    continue;
                }
                if let (Some(lf), Some(lt)) = (lf, lt) {
                    if lt >= lf {
                        out.push(format!(
                            "{} (layer {lf}) imports {} (layer {lt})",
                            show(from),
                            show(to)
                        ));
                    }
                }
                if PURE.contains(&tf.as_str())
                    && !PURE.contains(&tt.as_str())
                    && !PURE_MAY_ALSO.contains(&tt.as_str())
                {
                    out.push(format!(
                        "{} is in the pure stack but imports {}",
                        show(from),
                        show(to)
                    ));
                }
            }
        }
        out
    }
}

/// The next `pub use` / `pub(crate) use` / `pub(super) use` statement in `text`: (start of
/// the statement, start of its path).
fn find_pub_use(text: &str) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(k) = text[from..].find("pub") {
        let at = from + k;
        let prev = at.checked_sub(1).map(|p| text.as_bytes()[p]);
        let mut i = at + 3;
        if !prev.is_some_and(|p| p.is_ascii_alphanumeric() || p == b'_') {
            if text[i..].starts_with('(') {
                if let Some(close) = text[i..].find(')') {
                    i += close + 1;
                }
            }
            let after = text[i..].trim_start();
            if let Some(path) = after.strip_prefix("use ") {
                return Some((at, text.len() - path.len()));
            }
        }
        from = at + 3;
    }
    None
}

/// Byte ranges of inline modules (`mod tests { ... }`).
fn inline_mods(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    for at in word_starts(text, "mod") {
        let rest = &text[at + 3..];
        let name_len = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .count();
        let after_name = at + 3 + (rest.len() - rest.trim_start().len()) + name_len;
        if name_len == 0 || !text[after_name..].trim_start().starts_with('{') {
            continue;
        }
        let open = after_name + (text[after_name..].len() - text[after_name..].trim_start().len());
        let mut depth = 0;
        let mut end = b.len();
        for (j, &c) in b.iter().enumerate().skip(open) {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = j;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push((at, end));
    }
    out
}

/// Children declared as files: `mod x;`.
fn declared_children(text: &str) -> Vec<String> {
    word_starts(text, "mod")
        .into_iter()
        .filter_map(|at| {
            let rest = text[at + 3..].trim_start();
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            (!name.is_empty() && rest[name.len()..].trim_start().starts_with(';')).then_some(name)
        })
        .collect()
}

/// Offsets of `word` as a whole word followed by whitespace.
fn word_starts(text: &str, word: &str) -> Vec<usize> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(k) = text[from..].find(word) {
        let at = from + k;
        let prev_ok = at == 0 || !(b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_');
        let next_ok = b
            .get(at + word.len())
            .is_some_and(|c| c.is_ascii_whitespace());
        if prev_ok && next_ok {
            out.push(at);
        }
        from = at + word.len();
    }
    out
}

/// The absolute path a `pub use` path names from module `m`, or `None` for an external crate.
fn absolute(files: &BTreeSet<ModPath>, m: &ModPath, p: &ModPath, first: &str) -> Option<ModPath> {
    match first {
        "crate" => Some(p[1..].to_vec()),
        "self" => Some([m.clone(), p[1..].to_vec()].concat()),
        "super" => {
            let ups = p.iter().take_while(|s| *s == "super").count();
            let keep = m.len().saturating_sub(ups);
            Some([m[..keep].to_vec(), p[ups..].to_vec()].concat())
        }
        // A child module of `m` (`pub use engine::Engine`), else an external crate.
        _ => {
            let child = [m.clone(), vec![first.to_string()]].concat();
            files
                .contains(&child)
                .then(|| [m.clone(), p.clone()].concat())
        }
    }
}

/// The file module that `path` names: its longest prefix that is a file, following that
/// file's re-export of the next segment; `None` for an external item.
fn resolve(
    files: &BTreeSet<ModPath>,
    reexports: &BTreeMap<ModPath, BTreeMap<String, ModPath>>,
    path: &[String],
    depth: usize,
) -> Option<ModPath> {
    for k in (0..=path.len()).rev() {
        let prefix = path[..k].to_vec();
        if !files.contains(&prefix) {
            continue;
        }
        if let Some(next) = path.get(k) {
            if let Some(target) = reexports.get(&prefix).and_then(|r| r.get(next)) {
                if target.first().is_some_and(|s| s == "<extern>") {
                    return None;
                }
                if depth < 8 && target.as_slice() != path {
                    let full = [target.clone(), path[k + 1..].to_vec()].concat();
                    return resolve(files, reexports, &full, depth + 1);
                }
            }
        }
        return Some(prefix);
    }
    None
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn src() -> PathBuf {
    root().join("src")
}

fn core_src() -> PathBuf {
    root().join("core/src")
}

fn tree(files: &[(&str, &str)]) -> ModuleGraph {
    let sources: Vec<(String, String)> = files
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
    ModuleGraph::build(&sources)
}

fn edge(g: &ModuleGraph, from: &str, to: &str) -> bool {
    let split = |s: &str| -> ModPath {
        if s.is_empty() {
            Vec::new()
        } else {
            s.split("::").map(str::to_string).collect()
        }
    };
    g.edges
        .get(&split(from))
        .is_some_and(|t| t.contains(&split(to)))
}

#[test]
fn the_library_has_no_import_cycle_of_any_length() {
    let g = ModuleGraph::library();
    assert!(
        g.files.len() > 100,
        "found only {} source files",
        g.files.len()
    );
    let edges: usize = g.edges.values().map(BTreeSet::len).sum();
    assert!(
        edges > 400,
        "found only {edges} edges: the parser lost imports"
    );
    let cycles = g.cycles();
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn no_module_imports_a_higher_layer_and_the_pure_stack_imports_no_storage() {
    let g = ModuleGraph::library();
    let violations = g.layer_violations();
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

/// The names of every dependency a Cargo manifest links into its crate, in any form
/// (`[dependencies]` rows, `[dependencies.NAME]` tables, target-specific dependencies); dev-
/// and build-dependencies link into tests and build scripts only.
fn manifest_dependencies(manifest: &str) -> Vec<String> {
    let mut in_table = false;
    let mut deps = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[') {
            let header = header.trim_end_matches(']');
            let (table, name) = match header.split_once("dependencies") {
                Some((before, after)) if before.is_empty() || before.ends_with('.') => {
                    (true, after.strip_prefix('.'))
                }
                _ => (false, None),
            };
            in_table = table && name.is_none();
            if let Some(name) = name {
                deps.push(name.trim_matches('"').to_string());
            }
        } else if in_table && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.', ' ']).next().unwrap_or_default();
            deps.push(name.trim_matches('"').to_string());
        }
    }
    deps
}

/// The pure stack is its own crate (`core/`), so the compiler itself keeps storage out of it,
/// and its manifest links nothing but serialisation, errors and the thread pool; the Python
/// extension (`python/`) links the pure stack and PyO3 only: no DuckDB, no Arrow reaches it.
#[test]
fn the_pure_stack_is_a_crate_that_links_no_storage() {
    let read = |path: &str| {
        std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    for (manifest, allowed) in [
        (
            "core/Cargo.toml",
            &["serde", "serde_json", "thiserror", "rayon"][..],
        ),
        // serde_json: the policy class reads the policy's constants and curve specs as JSON;
        // rayon: the Kaplan-Meier frames are built on every core; mimalloc: the extension's
        // allocator (freed pages kept for the next fit).
        (
            "python/Cargo.toml",
            &[
                "hazardserve-core",
                "pyo3",
                "serde_json",
                "rayon",
                "mimalloc",
            ][..],
        ),
    ] {
        let deps = manifest_dependencies(&read(manifest));
        assert!(!deps.is_empty(), "no dependencies read from {manifest}");
        for d in &deps {
            assert!(
                allowed.contains(&d.as_str()),
                "{manifest} depends on `{d}` (allowed: {allowed:?})"
            );
        }
    }
    // The parser sees every form a dependency can take.
    let probe = "[package]\nname = \"x\"\n[dependencies]\nserde = \"1\"\n\
                 [dependencies.duckdb]\nversion = \"1\"\n\
                 [target.'cfg(unix)'.dependencies]\narrow = \"60\"\n[build-dependencies]\ncc = \"1\"\n\
                 [dev-dependencies]\nproptest = \"1\"\n";
    assert_eq!(manifest_dependencies(probe), ["serde", "duckdb", "arrow"]);
    for m in PURE.iter().chain(PURE_MAY_ALSO) {
        let (dir, file) = (core_src().join(m), core_src().join(format!("{m}.rs")));
        assert!(
            dir.is_dir() || file.is_file(),
            "pure module `{m}` is not in core/src"
        );
        let (dir, file) = (src().join(m), src().join(format!("{m}.rs")));
        assert!(
            !dir.exists() && !file.exists(),
            "pure module `{m}` is also in src/"
        );
    }
}

#[test]
fn the_graph_sees_the_edges_that_matter_in_the_tree() {
    let g = ModuleGraph::library();
    // Plain `use super::x::Y`, a re-export followed to its file, a child called by name, and
    // the crate root's call into the command line.
    assert!(edge(&g, "store::commit", "store::journal"));
    assert!(edge(&g, "replay::run", "replay::engine"));
    assert!(edge(&g, "cli", "cli::fit_cmd"));
    assert!(edge(&g, "", "cli"));
    assert!(edge(&g, "tui::view", "tui::screens"));
    assert!(edge(&g, "tui::screens", "tui::screens::nodes"));
    // `crate::store::Store` is defined in store/dir.rs, re-exported by store/mod.rs.
    assert!(edge(&g, "fit::load", "store::dir"));
    assert!(!edge(&g, "fit::load", "store"));
}

#[test]
fn the_guard_catches_a_three_file_cycle_across_two_folders() {
    let g = tree(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a/mod.rs", "mod x;\nmod z;\npub use x::X;\n"),
        ("a/x.rs", "use crate::b::y::Y;\npub struct X(Y);\n"),
        ("a/z.rs", "pub struct Z(super::X);\n"),
        ("b/mod.rs", "pub mod y;\n"),
        ("b/y.rs", "pub struct Y(crate::a::z::Z);\n"),
    ]);
    assert!(edge(&g, "a::z", "a::x"), "{:?}", g.edges);
    let cycles = g.cycles();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(cycles[0].starts_with("3 files"), "{}", cycles[0]);
    for f in ["a::x", "a::z", "b::y"] {
        assert!(cycles[0].contains(f), "{}", cycles[0]);
    }
    // Break one edge and the cycle is gone.
    let g = tree(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a/mod.rs", "mod x;\nmod z;\npub use x::X;\n"),
        ("a/x.rs", "pub struct X;\n"),
        ("a/z.rs", "pub struct Z(super::X);\n"),
        ("b/mod.rs", "pub mod y;\n"),
        ("b/y.rs", "pub struct Y(crate::a::z::Z);\n"),
    ]);
    assert!(g.cycles().is_empty(), "{:?}", g.cycles());
}

#[test]
fn the_guard_catches_a_crate_root_back_edge_and_a_mod_rs_cycle() {
    // store/commit.rs calling a helper defined beside `mod cli` in lib.rs points up a layer.
    let g = tree(&[
        (
            "lib.rs",
            "mod cli;\npub mod store;\npub fn helper() {}\npub fn main() { cli::run() }\n",
        ),
        ("cli/mod.rs", "pub fn run() { crate::store::commit(); }\n"),
        ("store/mod.rs", "mod commit;\npub use commit::commit;\n"),
        ("store/commit.rs", "pub fn commit() { crate::helper(); }\n"),
    ]);
    assert!(edge(&g, "store::commit", ""), "{:?}", g.edges);
    let v = g.layer_violations();
    assert!(
        v.iter()
            .any(|x| x.starts_with("store::commit (layer 1) imports crate root")),
        "{v:?}"
    );
    // And it closes a cycle through the root and the command line.
    assert!(!g.cycles().is_empty());
    // A mod.rs that uses its child while the child uses an item of the mod.rs is a cycle.
    let g = tree(&[
        ("lib.rs", "pub mod store;\n"),
        (
            "store/mod.rs",
            "mod lock;\npub struct Store;\npub fn open() { lock::take(); }\n",
        ),
        (
            "store/lock.rs",
            "use super::Store;\npub fn take() -> Option<Store> { None }\n",
        ),
    ]);
    assert_eq!(g.cycles().len(), 1, "{:?}", g.edges);
}

#[test]
fn the_pure_stack_may_not_import_storage() {
    let g = tree(&[
        ("lib.rs", "pub mod store;\npub mod survival;\n"),
        ("store/mod.rs", "pub struct Store;\n"),
        (
            "survival/mod.rs",
            "pub fn fit(_: &crate::store::Store) {}\n",
        ),
    ]);
    let v = g.layer_violations();
    assert!(
        v.iter().any(|x| x.contains("pure stack but imports store")),
        "{v:?}"
    );
}

#[test]
fn the_parser_sees_grouped_plain_and_aliased_imports_and_ignores_prose() {
    let g = tree(&[
        ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\npub use ext_crate as ext;\n"),
        (
            "a/mod.rs",
            "use crate::{b::{self, Bee}, c};\n// crate::x is prose\nconst S: &str = \"crate::x\";\nfn f() -> char { '\"' }\nfn g() { b::go(); let _ = crate::ext::Thing; }\n",
        ),
        ("b/mod.rs", "pub struct Bee;\npub fn go() {}\n"),
        ("c.rs", "/* crate::a is in a block comment */\nfn f(_: &'static str) {}\n"),
    ]);
    assert!(edge(&g, "a", "b") && edge(&g, "a", "c"), "{:?}", g.edges);
    assert!(!edge(&g, "c", "a"), "{:?}", g.edges);
    assert!(!g
        .edges
        .get(&vec!["a".to_string()])
        .is_some_and(|t| t.contains(&Vec::new())));
    let (trees, _) = path_trees("x::{y::{self, Z}, w as v, *}", 0);
    assert_eq!(
        trees,
        vec![
            vec!["x".to_string(), "y".into(), "self".into()],
            vec!["x".to_string(), "y".into(), "Z".into()],
            vec!["x".to_string(), "w".into()],
            vec!["x".to_string()],
        ]
    );
    assert!(code("let s = r#\"crate::cli\"#; // crate::tui")
        .find("crate::")
        .is_none());
}

#[test]
fn long_files_say_why_they_are_one_concept() {
    let mut files = Vec::new();
    rs_files(&src(), &mut files);
    rs_files(&core_src(), &mut files);
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

#[test]
fn the_book_layout_names_every_module_at_its_layer() {
    let readme = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/architecture.md"),
    )
    .unwrap_or_default();
    let start = readme
        .find("## Layout")
        .expect("docs/src/architecture.md has a Layout section");
    let block = &readme[start..];
    let block = &block[..block[3..].find("\n## ").map_or(block.len(), |e| e + 3)];
    // The drawing: the ```text block of the section.
    let from = block
        .find("```text")
        .expect("the Layout section draws the layers");
    let block = &block[from..];
    let block = &block[..block[3..].find("```").map_or(block.len(), |e| e + 3)];
    // Each module's row: the layer number leads the first line that names the module.
    let lines: Vec<&str> = block.lines().collect();
    for &(name, layer) in LAYERS {
        let shown = if name == "lib" { "lib.rs" } else { name };
        let Some(at) = lines.iter().position(|l| {
            l.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
                .any(|w| w == shown)
        }) else {
            panic!("the book's Layout does not name {shown}");
        };
        // The nearest layer number at or above that line.
        let row_layer = lines[..=at].iter().rev().find_map(|l| {
            let t = l.trim_start();
            let n: String = t.chars().take_while(char::is_ascii_digit).collect();
            (!n.is_empty() && l.starts_with("  "))
                .then(|| n.parse::<u32>().ok())
                .flatten()
        });
        assert_eq!(
            row_layer,
            Some(layer),
            "the book draws {shown} at layer {row_layer:?}, the guard has {layer}"
        );
    }
}
