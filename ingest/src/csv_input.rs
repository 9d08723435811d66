//! CSV reading shared by the CSV adapters, and offered to other crates ([`csv_records`]).
//!
//! Records are read with the [`csv`] crate, so quoted fields may hold commas, quotes (`""`) and
//! newlines; line endings may be LF, CRLF or CR; a leading UTF-8 byte-order mark is dropped.
//! Every record carries the 1-based line it starts on, fields are trimmed of surrounding
//! whitespace, records may have different field counts (the caller checks them), and lines
//! holding only whitespace are skipped. UTF-8 is checked per record: a record with an invalid
//! byte is an error for that record only, and reading goes on with the next one.

use std::borrow::Cow;
use std::io::Read;

use csv::{ByteRecord, ReaderBuilder, StringRecord, Trim};

/// A record that could not be read, with the line it starts on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct CsvRecordError {
    /// 1-based line of the record (of the end of the input for a read error).
    pub line: u64,
    /// What is wrong: `not valid UTF-8 text (byte 0xff at column 3)`, or the I/O error that
    /// ended reading.
    pub reason: String,
}

fn reader<R: Read>(input: R) -> csv::Reader<R> {
    ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(Trim::All)
        .from_reader(input)
}

/// Iterator of [`csv_records`].
pub struct CsvRecords {
    rows: std::vec::IntoIter<Result<(u64, StringRecord), CsvRecordError>>,
}

impl Iterator for CsvRecords {
    type Item = Result<(u64, StringRecord), CsvRecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.rows.next()
    }
}

/// Reads CSV records from `input` as `(line, record)` pairs (see the module docs: quoted fields,
/// any line ending, BOM dropped, fields trimmed, whitespace-only lines skipped, UTF-8 checked
/// per record). The input is read into memory first (line numbers are recovered from the
/// bytes). No header handling: a header is the first record; compare names with
/// `eq_ignore_ascii_case` or similar to find columns. A record that is not valid UTF-8 yields
/// an `Err` for that record and the others follow; an I/O error yields a final `Err`.
///
/// ```
/// let text = "\u{feff}name,tokens\r\n\"a, b\",3\r\n\r\n\"multi\nline\",4\n";
/// let rows: Vec<_> = hazardserve_ingest::csv_records(text.as_bytes())
///     .collect::<Result<_, _>>()
///     .unwrap();
/// assert_eq!(rows.len(), 3);
/// assert_eq!((rows[1].0, &rows[1].1[0]), (2, "a, b"));
/// assert_eq!((rows[2].0, &rows[2].1[0], &rows[2].1[1]), (4, "multi\nline", "4"));
/// ```
pub fn csv_records<R: Read>(mut input: R) -> CsvRecords {
    let mut bytes = Vec::new();
    let read = input.read_to_end(&mut bytes);
    let mut rows: Vec<_> = csv_rows(&bytes)
        .map(|r| {
            let line = r.line;
            r.fields
                .map(|f| (line, f))
                .map_err(|reason| CsvRecordError { line, reason })
        })
        .collect();
    if let Err(e) = read {
        rows.push(Err(CsvRecordError {
            line: 1 + bytes.iter().filter(|&&b| b == b'\n').count() as u64,
            reason: format!("cannot read: {e}"),
        }));
    }
    CsvRecords {
        rows: rows.into_iter(),
    }
}

/// Calls `f(line, fields)` for every record of `bytes`, with the rules of [`csv_records`]
/// (BOM dropped, fields trimmed, blank lines skipped, UTF-8 checked per record; a record that is
/// not UTF-8 is an error that stops the visit). Input without a quote character and without
/// bare CR line endings, the common case for numeric tables, is split in place with no
/// allocation per record; any other input goes through the full reader. `f`'s error stops the
/// visit and is returned.
///
/// ```
/// let mut seen = Vec::new();
/// hazardserve_ingest::csv_visit::<hazardserve_ingest::CsvRecordError>(
///     b"a,b\r\n 1 , 2\n\n3,4\n",
///     |line, f| {
///         seen.push((line, f.join("|")));
///         Ok(())
///     },
/// )
/// .unwrap();
/// assert_eq!(seen, vec![(1, "a|b".into()), (2, "1|2".into()), (4, "3|4".into())]);
/// ```
pub fn csv_visit<E: From<CsvRecordError>>(
    bytes: &[u8],
    mut f: impl FnMut(u64, &[&str]) -> Result<(), E>,
) -> Result<(), E> {
    let body = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    if !is_plain(body) {
        for row in csv_rows(bytes) {
            let fields = row.fields.map_err(|reason| CsvRecordError {
                line: row.line,
                reason,
            })?;
            let v: Vec<&str> = fields.iter().collect();
            f(row.line, &v)?;
        }
        return Ok(());
    }
    csv_visit_part(1, body, f)
}

/// True when `body` has no quote character and no bare CR line ending.
fn is_plain(body: &[u8]) -> bool {
    !body.contains(&b'"')
        && !body.windows(2).any(|w| w[0] == b'\r' && w[1] != b'\n')
        && body.last() != Some(&b'\r')
}

/// A plain CSV input (see [`csv_visit`]) cut for parallel reading: its header record, and the
/// lines after it in about `parts` pieces cut at line ends, each with the 1-based line number
/// of its first line. Read each piece with [`csv_visit_part`].
#[derive(Debug, Clone)]
pub struct PlainCsv<'a> {
    /// The header's fields, trimmed.
    pub header: Vec<&'a str>,
    /// The header's line.
    pub header_line: u64,
    /// `(first line, bytes)` of each piece, in order.
    pub parts: Vec<(u64, &'a [u8])>,
}

/// Cuts `bytes` into a [`PlainCsv`]; `None` when the input is not plain (quotes or bare CR
/// line endings: read it with [`csv_visit`]) or has no header. A header that is not UTF-8 is
/// an error naming its line.
pub fn csv_plain_parts(bytes: &[u8], parts: usize) -> Result<Option<PlainCsv<'_>>, CsvRecordError> {
    let body = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    if !is_plain(body) {
        return Ok(None);
    }
    // The header: the first line that is not blank.
    let (mut pos, mut line) = (0usize, 1u64);
    let header_raw = loop {
        if pos >= body.len() {
            return Ok(None);
        }
        let end = body[pos..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(body.len(), |k| pos + k);
        let raw = &body[pos..end];
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        pos = (end + 1).min(body.len());
        if !raw.iter().all(u8::is_ascii_whitespace) {
            break raw;
        }
        line += 1;
    };
    let header_text = std::str::from_utf8(header_raw).map_err(|_| CsvRecordError {
        line,
        reason: crate::input::utf8_reason_of(header_raw),
    })?;
    let header = header_text.split(',').map(str::trim).collect();
    let rest = &body[pos..];
    let mut first = line + 1;
    let mut out = Vec::new();
    let step = rest.len() / parts.max(1) + 1;
    let mut start = 0;
    while start < rest.len() {
        let cut = (start + step).min(rest.len());
        let end = match rest[cut..].iter().position(|&b| b == b'\n') {
            Some(k) => cut + k + 1,
            None => rest.len(),
        };
        let piece = &rest[start..end];
        out.push((first, piece));
        first += piece.iter().filter(|&&b| b == b'\n').count() as u64;
        start = end;
    }
    Ok(Some(PlainCsv {
        header,
        header_line: line,
        parts: out,
    }))
}

/// Calls `f(line, fields)` for every record of one plain piece whose first line is `first`
/// (a piece of [`csv_plain_parts`], or a whole plain input from line 1): fields trimmed, blank
/// lines skipped, UTF-8 checked per record.
pub fn csv_visit_part<E: From<CsvRecordError>>(
    first: u64,
    body: &[u8],
    mut f: impl FnMut(u64, &[&str]) -> Result<(), E>,
) -> Result<(), E> {
    let mut fields: Vec<&str> = Vec::new();
    for (i, raw) in body.split(|&b| b == b'\n').enumerate() {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let line = first + i as u64;
        let text = std::str::from_utf8(raw).map_err(|_| CsvRecordError {
            line,
            reason: crate::input::utf8_reason_of(raw),
        })?;
        fields.clear();
        fields.extend(text.split(',').map(str::trim));
        f(line, &fields)?;
    }
    Ok(())
}

/// One CSV record of an in-memory input, with its raw text for rejects.
pub(crate) struct CsvRow<'a> {
    /// 1-based line the record starts on.
    pub line: u64,
    /// The record's bytes as in the file, without the line terminator.
    pub raw: &'a [u8],
    /// The fields, or the reject reason when the record is not valid UTF-8.
    pub fields: Result<StringRecord, String>,
}

impl<'a> CsvRow<'a> {
    /// The raw record as text (invalid bytes replaced), for a reject's `raw` column.
    pub fn raw_text(&self) -> Cow<'a, str> {
        String::from_utf8_lossy(self.raw)
    }
}

/// The non-blank CSV records of `bytes` with their line and raw bytes, one at a time (a
/// large file is never held twice: only the current record is decoded).
pub(crate) fn csv_rows(bytes: &[u8]) -> CsvRowIter<'_> {
    CsvRowIter {
        rdr: reader(bytes),
        bytes,
        record: ByteRecord::new(),
    }
}

/// Iterator of [`csv_rows`].
pub(crate) struct CsvRowIter<'a> {
    rdr: csv::Reader<&'a [u8]>,
    bytes: &'a [u8],
    record: ByteRecord,
}

impl<'a> Iterator for CsvRowIter<'a> {
    type Item = CsvRow<'a>;

    fn next(&mut self) -> Option<CsvRow<'a>> {
        let bytes = self.bytes;
        // Reading from a slice cannot fail with I/O; a CSV error would end the input.
        while let Ok(true) = self.rdr.read_byte_record(&mut self.record) {
            let (mut line, start) = self
                .record
                .position()
                .map_or((1, 0), |p| (p.line(), p.byte() as usize));
            let end = (self.rdr.position().byte() as usize).min(bytes.len());
            let mut raw = &bytes[start.min(end)..end];
            // The record's position is where the reader stood, before the blank lines it
            // skipped.
            while let [first @ (b'\n' | b'\r'), rest @ ..] = raw {
                line += u64::from(*first == b'\n');
                raw = rest;
            }
            while let [rest @ .., b'\n' | b'\r'] = raw {
                raw = rest;
            }
            if raw.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let fields = StringRecord::from_byte_record(self.record.clone())
                .map_err(|_| crate::input::utf8_reason_of(raw));
            return Some(CsvRow { line, raw, fields });
        }
        None
    }
}

/// The first non-blank record of `text` (for sniffing), or `None`.
pub(crate) fn first_record(text: &str) -> Option<StringRecord> {
    csv_rows(text.as_bytes()).next().and_then(|r| r.fields.ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(r: &CsvRow) -> Vec<String> {
        r.fields
            .as_ref()
            .unwrap()
            .iter()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn rows_have_lines_raw_text_and_quoted_fields() {
        let text = b"a,b\r\n\r\n  \n\"x, y\",\"1\n2\"\n3,\"q\"\"q\"\nlast,\xff\nend";
        let rows: Vec<_> = csv_rows(text).collect();
        let got: Vec<(u64, String)> = rows
            .iter()
            .map(|r| (r.line, r.raw_text().into_owned()))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, "a,b".to_string()),
                (4, "\"x, y\",\"1\n2\"".to_string()),
                (6, "3,\"q\"\"q\"".to_string()),
                (7, "last,\u{fffd}".to_string()),
                (8, "end".to_string()),
            ]
        );
        assert_eq!(fields(&rows[1]), vec!["x, y", "1\n2"]);
        assert_eq!(fields(&rows[2]), vec!["3", "q\"q"]);
        assert!(rows[3].fields.as_ref().unwrap_err().contains("UTF-8"));
    }

    #[test]
    fn public_records_skip_blank_lines_and_report_bad_utf8() {
        let text = b"\xef\xbb\xbfh1,h2\n\n1,\xfe\n 2 , 3 \n";
        let got: Vec<_> = csv_records(&text[..]).collect();
        assert_eq!(got.len(), 3);
        let (line, rec) = got[0].as_ref().unwrap();
        assert_eq!((*line, &rec[0]), (1, "h1"));
        assert_eq!(
            got[1].as_ref().unwrap_err(),
            &CsvRecordError {
                line: 3,
                reason: "not valid UTF-8 text (byte 0xfe at column 3)".into()
            }
        );
        let (line, rec) = got[2].as_ref().unwrap();
        assert_eq!((*line, &rec[0], &rec[1]), (4, "2", "3"));
    }
}
