//! Finding and reading input files: paths, directories (recursive) and globs; transparent `.gz`;
//! content hashes for provenance and duplicate detection.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::{IngestError, Result};

/// One input file, read fully into memory (decompressed when it ends in `.gz`).
#[derive(Debug, Clone)]
pub struct InputFile {
    /// Where it is on disk.
    pub path: PathBuf,
    /// Its path relative to the argument it was found under (the file name for a file argument),
    /// with `/` separators. Adapters derive node keys from it.
    pub rel: String,
    /// The (decompressed) bytes.
    pub bytes: Vec<u8>,
    /// sha256 of the file as stored on disk (hex).
    pub sha256: String,
    /// sha256 of the decompressed content with CRLF normalised to LF (hex): equal for
    /// byte-identical and line-ending-identical inputs.
    pub content_hash: String,
}

impl InputFile {
    /// Reads one file from disk; `rel` is the name adapters see.
    pub fn read(path: &Path, rel: &str) -> Result<InputFile> {
        let io = |source| IngestError::Io {
            path: path.to_path_buf(),
            source,
        };
        let raw = std::fs::read(path).map_err(io)?;
        let sha256 = hex(&Sha256::digest(&raw));
        let bytes = if path.extension().is_some_and(|e| e == "gz") {
            let mut out = Vec::new();
            flate2::read::MultiGzDecoder::new(&raw[..])
                .read_to_end(&mut out)
                .map_err(io)?;
            out
        } else {
            raw
        };
        Ok(InputFile::from_bytes(path.to_path_buf(), rel, bytes, sha256))
    }

    /// Builds an input from bytes already in memory (tests, generators).
    pub fn from_bytes(path: PathBuf, rel: &str, bytes: Vec<u8>, sha256: String) -> InputFile {
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
        let sha256 = if sha256.is_empty() {
            hex(&Sha256::digest(&bytes))
        } else {
            sha256
        };
        InputFile {
            path,
            rel: rel.to_string(),
            bytes,
            sha256,
            content_hash,
        }
    }

    /// The name shown in messages: the path as found.
    pub fn display(&self) -> String {
        self.path.display().to_string()
    }

    /// `rel` without the `.gz` and the format extension: the default series key.
    pub fn stem_key(&self) -> String {
        let s = self.rel.strip_suffix(".gz").unwrap_or(&self.rel);
        match s.rfind('.') {
            Some(dot) if !s[dot..].contains('/') => s[..dot].to_string(),
            _ => s.to_string(),
        }
    }

    /// The content as UTF-8 text, or a clear error naming the file.
    pub fn text(&self) -> Result<&str> {
        std::str::from_utf8(&self.bytes).map_err(|e| IngestError::Bad {
            file: self.display(),
            line: line_of_offset(&self.bytes, e.valid_up_to()),
            reason: "not valid UTF-8 text".to_string(),
        })
    }

    /// The file name without directories.
    pub fn file_name(&self) -> &str {
        self.rel.rsplit('/').next().unwrap_or(&self.rel)
    }
}

fn line_of_offset(bytes: &[u8], off: usize) -> u64 {
    1 + bytes[..off].iter().filter(|&&b| b == b'\n').count() as u64
}

/// Lower-case hex of a digest.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Expands the command-line PATH arguments into a sorted, de-duplicated list of
/// `(path, rel)` pairs: a file is itself, a directory is every file below it (recursively,
/// hidden files skipped), anything else is tried as a glob.
pub fn expand_paths(args: &[String]) -> Result<Vec<(PathBuf, String)>> {
    let mut out: Vec<(PathBuf, String)> = Vec::new();
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
            walk(p, p, &mut out)?;
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
    let mut seen = std::collections::HashSet::new();
    out.retain(|(p, _)| seen.insert(p.canonicalize().unwrap_or_else(|_| p.clone())));
    out.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
    Ok(out)
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, String)>) -> Result<()> {
    let io = |source| IngestError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(io)?
        .collect::<std::io::Result<_>>()
        .map_err(io)?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let path = e.path();
        if path.is_dir() {
            walk(root, &path, out)?;
        } else if path.is_file() {
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            out.push((path, rel));
        }
    }
    Ok(())
}

/// Groups inputs whose content is identical up to line endings; returns one human-readable
/// note per group of two or more.
pub fn duplicate_notes(files: &[InputFile]) -> Vec<String> {
    let mut groups: std::collections::BTreeMap<&str, Vec<&InputFile>> = Default::default();
    for f in files {
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
