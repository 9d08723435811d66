//! Finding and reading input files: paths, directories (recursive, symlinks followed once) and
//! globs; transparent gzip (`.gz`, any letter case) with a cap on the decompressed size; tar
//! archives (`.tar`, `.tar.gz`, `.tgz`) expanded into one input per data member
//! ([`InputFile::read_all`]); content hashes for provenance and duplicate detection.
//!
//! Two things are settled here once for every adapter:
//!
//! * a leading UTF-8 byte-order mark is removed from the content ([`InputFile::from_bytes`]), so
//!   no adapter ever sees it;
//! * a file that cannot be read (I/O error, corrupt or truncated gzip, an archive without data,
//!   a decompressed size over the cap, a directory where a file was expected) does not stop the
//!   reading of the others: [`InputFile::read_all`] returns it as a *defective* input
//!   ([`InputFile::defect`]) that [`crate::parse`] turns into a reject (or, under `strict`, an
//!   error naming the file).

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::{IngestError, Result};

/// Default of [`ReadOptions::max_decompressed_bytes`]: 4 GiB.
pub const DEFAULT_MAX_DECOMPRESSED_BYTES: u64 = 4 << 30;

/// The UTF-8 byte-order mark that [`InputFile::from_bytes`] removes.
pub const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

/// How input files are read.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReadOptions {
    /// Largest decompressed size, in bytes, of one gzip file, one tar archive or one gzip member
    /// of an archive. A file that would decompress to more (a gzip bomb, or a genuinely larger
    /// file) is refused with [`IngestError::TooLarge`] naming the file and this cap.
    pub max_decompressed_bytes: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            max_decompressed_bytes: DEFAULT_MAX_DECOMPRESSED_BYTES,
        }
    }
}

/// One input file, read fully into memory (decompressed when it ends in `.gz`).
#[derive(Debug, Clone)]
pub struct InputFile {
    /// Where it is on disk.
    pub path: PathBuf,
    /// Its path relative to the argument it was found under (the file name for a file argument),
    /// with `/` separators. Adapters derive node keys from it.
    pub rel: String,
    /// The (decompressed) bytes, without a leading UTF-8 byte-order mark. Empty for a
    /// defective input.
    pub bytes: Vec<u8>,
    /// sha256 of the file as stored on disk (hex).
    pub sha256: String,
    /// sha256 of the decompressed content with CRLF normalised to LF (hex): equal for
    /// byte-identical and line-ending-identical inputs.
    pub content_hash: String,
    /// Why the file could not be read, when it could not (then `bytes` is empty). Set only by
    /// [`InputFile::read_all`] / [`InputFile::read_all_with`] and [`InputFile::unreadable`];
    /// [`crate::parse`] and [`crate::workload::parse`] turn it into a reject of record 0 (an
    /// error under `strict`).
    pub defect: Option<String>,
}

impl InputFile {
    /// Reads one file from disk with the default [`ReadOptions`]; `rel` is the name adapters see.
    /// Unlike [`InputFile::read_all`], any failure is an error.
    pub fn read(path: &Path, rel: &str) -> Result<InputFile> {
        InputFile::read_with(path, rel, &ReadOptions::default())
    }

    /// Reads one file from disk (decompressing `.gz`, any letter case, up to
    /// [`ReadOptions::max_decompressed_bytes`]); any failure is an error naming the file.
    pub fn read_with(path: &Path, rel: &str, options: &ReadOptions) -> Result<InputFile> {
        let raw = read_regular(path)?;
        let sha256 = hex(&Sha256::digest(&raw));
        let bytes = if is_gzip_name(path) {
            gunzip(&raw, path, options.max_decompressed_bytes)?
        } else {
            raw
        };
        Ok(InputFile::from_bytes(
            path.to_path_buf(),
            rel,
            bytes,
            sha256,
        ))
    }

    /// Reads one path into one or more inputs with the default [`ReadOptions`]; see
    /// [`InputFile::read_all_with`].
    pub fn read_all(path: &Path, rel: &str) -> Result<Vec<InputFile>> {
        InputFile::read_all_with(path, rel, &ReadOptions::default())
    }

    /// Reads one path into one or more inputs: a tar archive (`.tar`, `.tar.gz`, `.tgz`, any
    /// letter case) gives one input per regular member, in member-path order, with
    /// `rel = <rel>/<member path>` and `path = <archive path>/<member path>` (members ending in
    /// `.gz` are decompressed; hidden members and documentation such as `README*`, `LICENSE*` and
    /// `*.md` are skipped); any other file is [`InputFile::read_with`].
    ///
    /// Bad files never stop an ingest: a path that cannot be read (I/O error, a directory,
    /// corrupt or truncated gzip or tar, a decompressed size over the cap, an archive without
    /// data members) gives a single *defective* input ([`InputFile::unreadable`]) whose
    /// [`InputFile::defect`] says why; the parse step rejects it (or fails under `strict`). The
    /// `Result` is kept for callers; this function does not currently return `Err`.
    pub fn read_all_with(path: &Path, rel: &str, options: &ReadOptions) -> Result<Vec<InputFile>> {
        let read = if is_tar_archive(path) {
            read_tar(path, rel, options)
        } else {
            InputFile::read_with(path, rel, options).map(|f| vec![f])
        };
        Ok(read.unwrap_or_else(|e| vec![InputFile::unreadable(path, rel, defect_reason(&e))]))
    }

    /// A defective input: a file that could not be read, and why (see [`InputFile::defect`]).
    pub fn unreadable(path: &Path, rel: &str, reason: String) -> InputFile {
        let mut h = Sha256::new();
        h.update(b"unreadable\0");
        h.update(reason.as_bytes());
        let hash = hex(&h.finalize());
        InputFile {
            path: path.to_path_buf(),
            rel: rel.to_string(),
            bytes: Vec::new(),
            sha256: hash.clone(),
            content_hash: hash,
            defect: Some(reason),
        }
    }

    /// Builds an input from bytes already in memory (tests, generators). A leading UTF-8
    /// byte-order mark is removed here, once for every adapter; an empty `sha256` is computed
    /// from `bytes` as given.
    pub fn from_bytes(path: PathBuf, rel: &str, mut bytes: Vec<u8>, sha256: String) -> InputFile {
        let sha256 = if sha256.is_empty() {
            hex(&Sha256::digest(&bytes))
        } else {
            sha256
        };
        if bytes.starts_with(UTF8_BOM) {
            bytes.drain(..UTF8_BOM.len());
        }
        let mut h = Sha256::new();
        let mut last = 0;
        for (i, w) in bytes.windows(2).enumerate() {
            if w == b"\r\n" {
                h.update(&bytes[last..i]);
                last = i + 1;
            }
        }
        h.update(&bytes[last..]);
        let content_hash = hex(&h.finalize());
        InputFile {
            path,
            rel: rel.to_string(),
            bytes,
            sha256,
            content_hash,
            defect: None,
        }
    }

    /// An input from text in memory, named `rel` (tests, generated inputs).
    pub fn from_text(rel: &str, text: &str) -> InputFile {
        InputFile::from_bytes(
            PathBuf::from(rel),
            rel,
            text.as_bytes().to_vec(),
            String::new(),
        )
    }

    /// The name shown in messages: the path as found.
    pub fn display(&self) -> String {
        self.path.display().to_string()
    }

    /// `rel` without a compression suffix (`.gz`, any letter case) and the format extension:
    /// the default series key.
    pub fn stem_key(&self) -> String {
        stem_of(&self.rel)
    }

    /// The content as UTF-8 text, or a clear error naming the file (and the line of the first
    /// invalid byte). A defective input is an error naming its defect.
    pub fn text(&self) -> Result<&str> {
        if let Some(reason) = &self.defect {
            return Err(IngestError::Bad {
                file: self.display(),
                line: 0,
                reason: reason.clone(),
            });
        }
        std::str::from_utf8(&self.bytes).map_err(|e| IngestError::Bad {
            file: self.display(),
            line: line_of_offset(&self.bytes, e.valid_up_to()),
            reason: utf8_reason(&self.bytes, e.valid_up_to()),
        })
    }

    /// The content's lines, 1-based, split on `\n` with a trailing `\r` removed; each line is
    /// checked for UTF-8 on its own ([`Line::text`]), so one bad byte spoils one line, not the
    /// file. A final empty line after the last `\n` is not yielded.
    pub fn lines(&self) -> impl Iterator<Item = Line<'_>> {
        let bytes = &self.bytes[..];
        let n = if bytes.is_empty() {
            0
        } else {
            bytes.split(|&b| b == b'\n').count() - usize::from(bytes.ends_with(b"\n"))
        };
        bytes
            .split(|&b| b == b'\n')
            .take(n)
            .enumerate()
            .map(|(i, l)| Line {
                number: i as u64 + 1,
                bytes: l.strip_suffix(b"\r").unwrap_or(l),
            })
    }

    /// The file name without directories.
    pub fn file_name(&self) -> &str {
        self.rel.rsplit('/').next().unwrap_or(&self.rel)
    }

    /// What format sniffing looks at: the first [`SNIFF_BYTES`] bytes (the whole file when
    /// shorter) as text, ending before the first byte that is not valid UTF-8 (so a multi-byte
    /// character cut by the limit, or a binary file, gives a shorter or empty head, never an
    /// error).
    pub fn sniff_head(&self) -> &str {
        let head = &self.bytes[..self.bytes.len().min(SNIFF_BYTES)];
        match std::str::from_utf8(head) {
            Ok(s) => s,
            // `valid_up_to` is a char boundary, so this prefix is valid UTF-8.
            Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default(),
        }
    }

    /// Whether the (decompressed) content contains `needle` anywhere (a byte search: works on
    /// files that are not valid UTF-8).
    pub fn contains(&self, needle: &str) -> bool {
        let n = needle.as_bytes();
        !n.is_empty() && self.bytes.windows(n.len()).any(|w| w == n)
    }
}

/// One line of an input ([`InputFile::lines`]).
#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    /// 1-based line number.
    pub number: u64,
    /// The bytes of the line, without `\n` and a trailing `\r`.
    pub bytes: &'a [u8],
}

impl<'a> Line<'a> {
    /// The line as text, or the reject reason when it is not valid UTF-8.
    pub fn text(&self) -> std::result::Result<&'a str, String> {
        std::str::from_utf8(self.bytes).map_err(|e| utf8_reason(self.bytes, e.valid_up_to()))
    }

    /// The line with invalid bytes replaced by U+FFFD (for the `raw` column of a reject).
    pub fn lossy(&self) -> std::borrow::Cow<'a, str> {
        String::from_utf8_lossy(self.bytes)
    }
}

/// How many leading bytes of a file [`InputFile::sniff_head`] gives the format sniffers (4 KB).
pub const SNIFF_BYTES: usize = 4096;

/// Whether `path` names a tar archive that [`InputFile::read_all`] expands
/// (`.tar`, `.tar.gz`, `.tgz`, any letter case).
pub fn is_tar_archive(path: &Path) -> bool {
    let name = lower_name(path);
    name.ends_with(".tar") || name.ends_with(".tar.gz") || name.ends_with(".tgz")
}

/// Whether `path` names a gzip-compressed file (`.gz`, `.tgz`, any letter case).
pub fn is_gzip_name(path: &Path) -> bool {
    let name = lower_name(path);
    name.ends_with(".gz") || name.ends_with(".tgz")
}

fn lower_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default()
}

/// `rel` without a compression suffix and the format extension ([`InputFile::stem_key`]).
fn stem_of(rel: &str) -> String {
    let s = strip_gz_suffix(rel);
    match s.rfind('.') {
        Some(dot) if !s[dot..].contains('/') => s[..dot].to_string(),
        _ => s.to_string(),
    }
}

/// `name` without a trailing `.gz` in any letter case.
fn strip_gz_suffix(name: &str) -> &str {
    let n = name.len();
    if n >= 3 && name.is_char_boundary(n - 3) && name[n - 3..].eq_ignore_ascii_case(".gz") {
        &name[..n - 3]
    } else {
        name
    }
}

/// The reason recorded for a defective input: the error's message without the path (the
/// reject names the file itself), with the underlying cause.
pub fn defect_reason(e: &IngestError) -> String {
    match e {
        IngestError::Io { source, .. } => format!("cannot read: {source}"),
        IngestError::Decompress { source, .. } => {
            format!("not a valid gzip stream (corrupt or truncated): {source}")
        }
        IngestError::Archive { source, .. } => {
            format!("not a valid tar archive (corrupt or truncated): {source}")
        }
        IngestError::TooLarge { limit, .. } => too_large_reason(*limit),
        IngestError::Bad { reason, .. } => reason.clone(),
        IngestError::NoInput(what) => format!("no input: {what}"),
        other => other.to_string(),
    }
}

/// The message of [`IngestError::TooLarge`] without the path.
pub(crate) fn too_large_reason(limit: u64) -> String {
    format!(
        "decompressed content exceeds the limit of {limit} bytes ({}); a gzip bomb, or raise \
         the maximum decompressed size (ReadOptions::max_decompressed_bytes)",
        human_bytes(limit)
    )
}

fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = n as f64;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < UNITS.len() {
        x /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{x:.1} {}", UNITS[u])
    }
}

/// Reads a regular file; a directory or special file is an error (never opened: reading a FIFO
/// would block).
fn read_regular(path: &Path) -> Result<Vec<u8>> {
    let io = |source| IngestError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if meta.is_dir() {
        // Say why it cannot be listed when it cannot (an unreadable directory met by the walk).
        std::fs::read_dir(path).map_err(io)?;
        return Err(io(std::io::Error::other("is a directory, not a file")));
    }
    if !meta.is_file() {
        return Err(io(std::io::Error::other(
            "not a regular file (a FIFO, socket or device)",
        )));
    }
    std::fs::read(path).map_err(io)
}

fn read_tar(path: &Path, rel: &str, options: &ReadOptions) -> Result<Vec<InputFile>> {
    let limit = options.max_decompressed_bytes;
    let raw = read_regular(path)?;
    let tar_bytes = if is_gzip_name(path) {
        gunzip(&raw, path, limit)?
    } else {
        raw
    };
    let bad_tar = |source| IngestError::Archive {
        path: path.to_path_buf(),
        source,
    };
    let mut archive = tar::Archive::new(&tar_bytes[..]);
    let mut out = Vec::new();
    for entry in archive.entries().map_err(bad_tar)? {
        let mut entry = entry.map_err(bad_tar)?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let member = entry
            .path()
            .map_err(bad_tar)?
            .components()
            .filter_map(|c| match c {
                std::path::Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("/");
        if member.is_empty() || skipped_member(&member) {
            continue;
        }
        let mut stored = Vec::new();
        entry.read_to_end(&mut stored).map_err(bad_tar)?;
        let sha256 = hex(&Sha256::digest(&stored));
        let member_path = path.join(&member);
        let bytes = if is_gzip_name(Path::new(&member)) {
            gunzip(&stored, &member_path, limit)?
        } else {
            stored
        };
        out.push(InputFile::from_bytes(
            member_path,
            &format!("{rel}/{member}"),
            bytes,
            sha256,
        ));
    }
    if out.is_empty() {
        return Err(IngestError::NoInput(format!(
            "{} (tar archive without data members)",
            path.display()
        )));
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(out)
}

/// Archive members that are not data: hidden files (and AppleDouble `._*`), `README*`,
/// `LICENSE*`, `*.md`.
fn skipped_member(member: &str) -> bool {
    let hidden = member.split('/').any(|c| c.starts_with('.'));
    let name = member
        .rsplit('/')
        .next()
        .unwrap_or(member)
        .to_ascii_lowercase();
    hidden || name.starts_with("readme") || name.starts_with("license") || name.ends_with(".md")
}

/// Decompresses gzip (all members) into at most `limit` bytes.
fn gunzip(raw: &[u8], path: &Path, limit: u64) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(raw)
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|source| IngestError::Decompress {
            path: path.to_path_buf(),
            source,
        })?;
    if out.len() as u64 > limit {
        return Err(IngestError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(out)
}

fn line_of_offset(bytes: &[u8], off: usize) -> u64 {
    1 + bytes[..off].iter().filter(|&&b| b == b'\n').count() as u64
}

/// The reject reason for bytes that are not valid UTF-8 (see [`utf8_reason`]).
pub(crate) fn utf8_reason_of(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(_) => "not valid UTF-8 text".to_string(),
        Err(e) => utf8_reason(bytes, e.valid_up_to()),
    }
}

/// "not valid UTF-8 text (byte 0xff at column 3)" for the first invalid byte at `off`.
fn utf8_reason(bytes: &[u8], off: usize) -> String {
    let line_start = bytes[..off]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    match bytes.get(off) {
        Some(b) => format!(
            "not valid UTF-8 text (byte 0x{b:02x} at column {})",
            off - line_start + 1
        ),
        None => "not valid UTF-8 text (a multi-byte character is cut at the end)".to_string(),
    }
}

/// Lower-case hex of a digest.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Expands the command-line PATH arguments into a sorted, de-duplicated list of
/// `(path, rel)` pairs: a file is itself, a directory is every file below it (recursively,
/// hidden files skipped), anything else is tried as a glob. `rel` is the file name for a file
/// argument or a glob match, and the path below the argument for a directory argument; when two
/// different files would get the same node key from it, their parent directories are put in
/// front until they differ (see the note on duplicate keys below).
///
/// The walk follows symbolic links but enters each directory once (a visited set of device and
/// inode, or canonical path off Unix), so symlink loops end. Entries that cannot be walked or
/// are not regular files (an unreadable directory, a broken link, a FIFO) are listed too, so that
/// reading them gives a defective input that the parse reports, instead of being dropped
/// silently.
///
/// Duplicate keys: adapters derive node keys from `rel` without its extension
/// ([`InputFile::stem_key`]), so `d1/x.json` and `d2/x.json` given as two arguments (or two
/// directory arguments that both hold `x.json`) would merge two nodes into one. Such files get
/// as many parent directories in front of `rel` as it takes to tell them apart (`d1/x.json`,
/// `d2/x.json`); the other files keep their `rel`. Files that no directory tells apart (`x.json`
/// beside `x.json.gz`) keep the same key and are refused by [`crate::parse`].
pub fn expand_paths(args: &[String]) -> Result<Vec<(PathBuf, String)>> {
    let mut out: Vec<(PathBuf, String)> = Vec::new();
    let mut visited = HashSet::new();
    for arg in args {
        let p = Path::new(arg);
        if p.is_file() {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| arg.clone());
            out.push((p.to_path_buf(), name));
        } else if p.is_dir() {
            let before = out.len();
            walk(p, p, &mut visited, &mut out);
            if out.len() == before {
                return Err(IngestError::NoInput(arg.clone()));
            }
        } else {
            let paths = glob::glob(arg).map_err(|e| IngestError::Glob {
                pattern: arg.clone(),
                message: e.msg.to_string(),
            })?;
            let before = out.len();
            for entry in paths {
                let path = entry.map_err(|e| IngestError::Io {
                    path: e.path().to_path_buf(),
                    source: std::io::Error::other(e.to_string()),
                })?;
                if path.is_file() {
                    let name = path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    out.push((path, name));
                }
            }
            if out.len() == before {
                return Err(IngestError::NoInput(arg.clone()));
            }
        }
    }
    let mut seen = HashSet::new();
    out.retain(|(p, _)| seen.insert(p.canonicalize().unwrap_or_else(|_| p.clone())));
    disambiguate(&mut out);
    out.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
    Ok(out)
}

/// Makes the node keys of different files different: files whose `rel` gives the same
/// [`InputFile::stem_key`] (`d1/x.json` and `d2/x.json` given as two file arguments, or two
/// directory arguments that both hold `x.json`) get as many of the parent directories of their
/// path in front of `rel` as it takes to tell them apart (`d1/x.json`, `d2/x.json`); the other
/// files keep theirs. Files that no directory tells apart (`x.json` beside `x.json.gz`) are left
/// alone, and [`crate::parse`] refuses them ([`IngestError::DuplicateKey`]).
fn disambiguate(out: &mut [(PathBuf, String)]) {
    let mut groups: std::collections::HashMap<String, Vec<usize>> = Default::default();
    for (i, (_, rel)) in out.iter().enumerate() {
        groups.entry(stem_of(rel)).or_default().push(i);
    }
    for group in groups.into_values().filter(|g| g.len() > 1) {
        let parts: Vec<Vec<String>> = group
            .iter()
            .map(|&i| {
                out[i]
                    .0
                    .components()
                    .filter_map(|c| match c {
                        std::path::Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        let depth: Vec<usize> = group.iter().map(|&i| out[i].1.split('/').count()).collect();
        let longest = parts.iter().map(Vec::len).max().unwrap_or(0);
        for extra in 1..=longest {
            let candidates: Vec<String> = group
                .iter()
                .enumerate()
                .map(|(k, &i)| {
                    let p = &parts[k];
                    let take = (depth[k] + extra).min(p.len());
                    let parents = &p[p.len() - take..p.len() - depth[k].min(p.len())];
                    if parents.is_empty() {
                        out[i].1.clone()
                    } else {
                        format!("{}/{}", parents.join("/"), out[i].1)
                    }
                })
                .collect();
            let keys: HashSet<String> = candidates.iter().map(|c| stem_of(c)).collect();
            if keys.len() == group.len() {
                for (k, &i) in group.iter().enumerate() {
                    out[i].1 = candidates[k].clone();
                }
                break;
            }
        }
    }
}

/// [`expand_paths`] then [`InputFile::read_all_with`] on every path: the inputs of one ingest.
/// Files that cannot be read come back as defective inputs (see [`InputFile::defect`]).
pub fn read_inputs(args: &[String], options: &ReadOptions) -> Result<Vec<InputFile>> {
    let mut files = Vec::new();
    for (path, rel) in expand_paths(args)? {
        files.extend(InputFile::read_all_with(&path, &rel, options)?);
    }
    Ok(files)
}

/// Identity of a directory for the walk's visited set.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum DirId {
    #[cfg_attr(not(unix), allow(dead_code))]
    Inode(u64, u64),
    #[cfg_attr(unix, allow(dead_code))]
    Canonical(PathBuf),
}

fn dir_id(path: &Path) -> Option<DirId> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path)
            .ok()
            .map(|m| DirId::Inode(m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        path.canonicalize().ok().map(DirId::Canonical)
    }
}

fn rel_of(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

fn walk(root: &Path, dir: &Path, visited: &mut HashSet<DirId>, out: &mut Vec<(PathBuf, String)>) {
    match dir_id(dir) {
        Some(id) => {
            if !visited.insert(id) {
                return; // reached again through a symlink: already walked
            }
        }
        None => {
            out.push((dir.to_path_buf(), rel_of(root, dir)));
            return;
        }
    }
    let entries: std::io::Result<Vec<_>> =
        std::fs::read_dir(dir).and_then(|rd| rd.collect::<std::io::Result<Vec<_>>>());
    let Ok(mut entries) = entries else {
        // Unreadable: listed, so that reading it reports why.
        let rel = rel_of(root, dir);
        let rel = if rel.is_empty() {
            dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| dir.display().to_string())
        } else {
            rel
        };
        out.push((dir.to_path_buf(), rel));
        return;
    };
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let path = e.path();
        if path.is_dir() {
            walk(root, &path, visited, out);
        } else {
            // Regular files, and anything else (broken links, FIFOs) so reading reports it.
            out.push((path.clone(), rel_of(root, &path)));
        }
    }
}

/// Groups inputs whose content is identical up to line endings; returns one human-readable
/// note per group of two or more. Defective inputs are left out.
pub fn duplicate_notes(files: &[InputFile]) -> Vec<String> {
    let mut groups: std::collections::BTreeMap<&str, Vec<&InputFile>> = Default::default();
    for f in files.iter().filter(|f| f.defect.is_none()) {
        groups.entry(&f.content_hash).or_default().push(f);
    }
    groups
        .values()
        .filter(|g| g.len() > 1)
        .map(|g| {
            let same_bytes = g.iter().all(|f| f.sha256 == g[0].sha256);
            let names: Vec<String> = g.iter().map(|f| f.rel.clone()).collect();
            format!(
                "duplicate content ({}): {}",
                if same_bytes {
                    "byte-identical"
                } else {
                    "identical up to line endings"
                },
                names.join(", ")
            )
        })
        .collect()
}

#[cfg(test)]
mod tar_tests {
    use super::*;
    use std::io::Write;

    fn append(b: &mut tar::Builder<Vec<u8>>, name: &str, data: &[u8]) {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, name, data).unwrap();
    }

    #[test]
    fn read_all_expands_tar_gz_members() {
        let mut b = tar::Builder::new(Vec::new());
        append(&mut b, "top/README.md", b"docs");
        append(&mut b, "top/z_a_1/full.json", b"{\"data\": [1]}");
        append(&mut b, "top/z_a_1/._full.json", b"junk");
        append(&mut b, "top/0.json", b"{\"data\": [0]}");
        let tar_bytes = b.into_inner().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&tar_bytes).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conv.tar.gz");
        std::fs::write(&path, gz.finish().unwrap()).unwrap();

        let files = InputFile::read_all(&path, "data/conv.tar.gz").unwrap();
        let rels: Vec<&str> = files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(
            rels,
            vec![
                "data/conv.tar.gz/top/0.json",
                "data/conv.tar.gz/top/z_a_1/full.json"
            ]
        );
        assert_eq!(files[1].bytes, b"{\"data\": [1]}");
        assert_eq!(files[1].stem_key(), "data/conv.tar.gz/top/z_a_1/full");
        assert_eq!(files[1].path, path.join("top/z_a_1/full.json"));

        // Ordinary files still read as one input.
        let plain = dir.path().join("x.json");
        std::fs::write(&plain, b"{}").unwrap();
        let one = InputFile::read_all(&plain, "x.json").unwrap();
        assert_eq!((one.len(), one[0].bytes.as_slice()), (1, &b"{}"[..]));
        assert!(is_tar_archive(Path::new("a/b.TGZ")) && !is_tar_archive(Path::new("a.gz")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(bytes: Vec<u8>) -> InputFile {
        InputFile::from_bytes(PathBuf::from("f"), "f", bytes, String::new())
    }

    #[test]
    fn sniff_head_is_the_valid_utf8_prefix_of_the_first_4_kb() {
        assert_eq!(file(b"a,b\n1,2\n".to_vec()).sniff_head(), "a,b\n1,2\n");
        let long = "x".repeat(SNIFF_BYTES + 10);
        assert_eq!(file(long.into_bytes()).sniff_head().len(), SNIFF_BYTES);
        // a two-byte character cut by the limit is left out
        let mut cut = "y".repeat(SNIFF_BYTES - 1);
        cut.push('é');
        assert_eq!(file(cut.into_bytes()).sniff_head().len(), SNIFF_BYTES - 1);
        // invalid UTF-8 ends the head
        assert_eq!(file(b"ok\xff\xfemore".to_vec()).sniff_head(), "ok");
        assert_eq!(file(Vec::new()).sniff_head(), "");
    }
}
