//! Finding and reading input files: paths, directories (recursive) and globs; transparent `.gz`;
//! tar archives (`.tar`, `.tar.gz`, `.tgz`) expanded into one input per data member
//! ([`InputFile::read_all`]); content hashes for provenance and duplicate detection.

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
        Ok(InputFile::from_bytes(
            path.to_path_buf(),
            rel,
            bytes,
            sha256,
        ))
    }

    /// Reads one path into one or more inputs: a tar archive (`.tar`, `.tar.gz`, `.tgz`) gives one
    /// input per regular member, in member-path order, with `rel = <rel>/<member path>` and
    /// `path = <archive path>/<member path>` (members ending in `.gz` are decompressed; hidden
    /// members and documentation such as `README*`, `LICENSE*` and `*.md` are skipped); any
    /// other file is [`InputFile::read`]. An archive without data members is an error.
    pub fn read_all(path: &Path, rel: &str) -> Result<Vec<InputFile>> {
        if !is_tar_archive(path) {
            return Ok(vec![InputFile::read(path, rel)?]);
        }
        let io = |source| IngestError::Io {
            path: path.to_path_buf(),
            source,
        };
        let raw = std::fs::read(path).map_err(io)?;
        let tar_bytes = if path.extension().is_some_and(|e| e == "gz" || e == "tgz") {
            gunzip(&raw).map_err(io)?
        } else {
            raw
        };
        let mut archive = tar::Archive::new(&tar_bytes[..]);
        let mut out = Vec::new();
        for entry in archive.entries().map_err(io)? {
            let mut entry = entry.map_err(io)?;
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let member = entry
                .path()
                .map_err(io)?
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
            entry.read_to_end(&mut stored).map_err(io)?;
            let sha256 = hex(&Sha256::digest(&stored));
            let bytes = if member.ends_with(".gz") {
                gunzip(&stored).map_err(io)?
            } else {
                stored
            };
            out.push(InputFile::from_bytes(
                path.join(&member),
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
}

/// How many leading bytes of a file [`InputFile::sniff_head`] gives the format sniffers (4 KB).
pub const SNIFF_BYTES: usize = 4096;

/// Whether `path` names a tar archive that [`InputFile::read_all`] expands
/// (`.tar`, `.tar.gz`, `.tgz`).
pub fn is_tar_archive(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    name.ends_with(".tar") || name.ends_with(".tar.gz") || name.ends_with(".tgz")
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

fn gunzip(raw: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(raw).read_to_end(&mut out)?;
    Ok(out)
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
