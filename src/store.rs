//! Files that must never be seen half-written: corpus and findings are rewritten beside their
//! final name and renamed into place.

use std::io::{Read, Write};
use std::path::Path;

fn is_gz(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "gz")
}

/// The text of a file, gunzipped when its name ends in `.gz`.
pub fn read_text(path: &Path) -> std::io::Result<Vec<u8>> {
    let raw = std::fs::read(path)?;
    if !is_gz(path) {
        return Ok(raw);
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&raw[..]).read_to_end(&mut out)?;
    Ok(out)
}

/// The lines, each ended by a newline.
fn joined(lines: &[String]) -> Vec<u8> {
    let mut text = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for l in lines {
        text.extend_from_slice(l.as_bytes());
        text.push(b'\n');
    }
    text
}

/// Append `lines` to the file at `path` (created if missing; gzipped when its name ends in
/// `.gz`) so that readers see either the old content or the old content plus every new line,
/// never a part.
pub fn append_lines_atomically(path: &Path, lines: &[String]) -> std::io::Result<()> {
    let mut text = match read_text(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    if !text.is_empty() && !text.ends_with(b"\n") {
        text.push(b'\n');
    }
    text.extend_from_slice(&joined(lines));
    write_atomically(path, &text)
}

/// Replace the file at `path` with `lines` (gzipped when its name ends in `.gz`), atomically.
pub fn write_lines_atomically(path: &Path, lines: &[String]) -> std::io::Result<()> {
    write_atomically(path, &joined(lines))
}

/// Replace the file at `path` with `bytes` (gzipped when its name ends in `.gz`) so that
/// readers see the old file or the new one, never a part: written beside it, synced, renamed.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace_with(path, |file| {
        let f = std::io::BufWriter::new(file);
        let mut f = if is_gz(path) {
            let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::best());
            gz.write_all(bytes)?;
            gz.finish()?
        } else {
            let mut f = f;
            f.write_all(bytes)?;
            f
        };
        f.flush()
    })
}

/// Replace the file at `path` with what `fill` writes into a new file beside it, atomically:
/// the new file is synced and renamed into place only when `fill` succeeds; otherwise it is
/// removed and the old file stays.
pub fn replace_with(path: &Path, fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|mut file| {
        fill(&mut file)?;
        file.sync_all()
    });
    match written {
        Ok(()) => std::fs::rename(&tmp, path),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Today's date in UTC, `YYYY-MM-DD` (for provenance).
pub fn today_utc() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let days = (secs / 86_400) as i64;
    // Civil-from-days (proleptic Gregorian), after Howard Hinnant's algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_keep_old_lines_and_leave_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/corpus.jsonl");
        append_lines_atomically(&p, &["a".into()]).unwrap();
        append_lines_atomically(&p, &["b".into(), "c".into()]).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "a\nb\nc\n");
        let gz = dir.path().join("sub/corpus.jsonl.gz");
        append_lines_atomically(&gz, &["a".into()]).unwrap();
        append_lines_atomically(&gz, &["b".into()]).unwrap();
        assert_eq!(read_text(&gz).unwrap(), b"a\nb\n");
        assert_ne!(std::fs::read(&gz).unwrap(), b"a\nb\n");
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2);
        let today = today_utc();
        assert_eq!(today.len(), 10);
        assert!(today.starts_with("20"), "{today}");
    }
}
