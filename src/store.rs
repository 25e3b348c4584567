//! Files that must never be seen half-written: corpus and findings are rewritten beside their
//! final name and renamed into place.

use std::io::{Read, Write};
use std::path::Path;

fn is_gz(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "gz")
}

fn is_xz(path: &Path) -> bool {
    path.extension().is_some_and(|x| x == "xz")
}

const GZ_MAGIC: &[u8] = &[0x1f, 0x8b];
const XZ_MAGIC: &[u8] = &[0xfd, b'7', b'z', b'X', b'Z', 0];

/// The text of a file, decompressed when it is gzip or xz (told by its first bytes, so a
/// misnamed file still reads right).
pub fn read_text(path: &Path) -> std::io::Result<Vec<u8>> {
    decompress(std::fs::read(path)?)
}

/// `raw` decompressed when it is gzip or xz (told by its first bytes), else as it is.
pub fn decompress(raw: Vec<u8>) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    if raw.starts_with(GZ_MAGIC) {
        flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut out)?;
    } else if raw.starts_with(XZ_MAGIC) {
        liblzma::read::XzDecoder::new_multi_decoder(&raw[..]).read_to_end(&mut out)?;
    } else {
        return Ok(raw);
    }
    Ok(out)
}

/// File name endings of tab-separated tables (kernel tables, predictors), most preferred
/// first: xz, gzip, plain.
pub const TSV_ENDINGS: [&str; 3] = [".tsv.xz", ".tsv.gz", ".tsv"];

/// The table file for `stem` in `dir`: the one that exists (`.tsv.xz`, `.tsv.gz`, `.tsv`, in
/// that order), or `.tsv.xz` for a new one. A table rewritten keeps its format.
pub fn tsv_file(dir: &Path, stem: &str) -> std::path::PathBuf {
    TSV_ENDINGS.iter().map(|e| dir.join(format!("{stem}{e}"))).find(|p| p.exists()).unwrap_or_else(|| dir.join(format!("{stem}{}", TSV_ENDINGS[0])))
}

/// A table file's name without its ending (`x.configs.tsv.xz` -> `x.configs`), or None where
/// it is not a table file.
pub fn tsv_stem(name: &str) -> Option<&str> {
    TSV_ENDINGS.iter().find_map(|e| name.strip_suffix(e))
}

/// File name endings of line files, most preferred first: xz (the corpus), gzip, plain.
pub const JSONL_ENDINGS: [&str; 3] = [".jsonl.xz", ".jsonl.gz", ".jsonl"];

/// Whether `path` names a JSON-lines file, compressed or not.
pub fn is_jsonl(path: &Path) -> bool {
    let name = path.to_string_lossy();
    JSONL_ENDINGS.iter().any(|e| name.ends_with(e))
}

/// A JSON-lines file's name without its ending (`corpus/x.jsonl.xz` -> `x`).
pub fn jsonl_stem(path: &Path) -> String {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    JSONL_ENDINGS.iter().find_map(|e| name.strip_suffix(e)).map_or(name.clone(), str::to_string)
}

/// The line file for `stem` in `dir`: the one that exists (`.jsonl.xz`, `.jsonl.gz`, `.jsonl`,
/// in that order), or `.jsonl.xz` for a new one.
pub fn jsonl_file(dir: &Path, stem: &str) -> std::path::PathBuf {
    JSONL_ENDINGS.iter().map(|e| dir.join(format!("{stem}{e}"))).find(|p| p.exists()).unwrap_or_else(|| dir.join(format!("{stem}{}", JSONL_ENDINGS[0])))
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

/// Append `lines` to the file at `path` (created if missing; compressed when its name ends in
/// `.gz` or `.xz`) so that readers see either the old content or the old content plus every new line,
/// never a part. Writers take turns: each holds an exclusive lock on `.{name}.append-lock`
/// beside the file while it reads, extends and renames, so two processes (or threads)
/// appending at once both land every line.
pub fn append_lines_atomically(path: &Path, lines: &[String]) -> std::io::Result<()> {
    let _turn = AppendLock::take(path)?;
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

/// An exclusive advisory lock on a file's append-lock file, released when the file closes (when
/// dropped, or by the operating system when the process dies, so a killed writer never blocks
/// the next).
struct AppendLock(#[allow(dead_code)] std::fs::File);

impl AppendLock {
    fn take(path: &Path) -> std::io::Result<AppendLock> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let lock = path.with_file_name(format!(".{name}.append-lock"));
        let file = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&lock)?;
        file.lock()?;
        Ok(AppendLock(file))
    }
}

/// Replace the file at `path` with `lines` (compressed when its name ends in `.gz` or `.xz`),
/// atomically.
pub fn write_lines_atomically(path: &Path, lines: &[String]) -> std::io::Result<()> {
    write_atomically(path, &joined(lines))
}

/// Replace the file at `path` with `bytes` (gzip -9 when its name ends in `.gz`, xz -6 when
/// it ends in `.xz`) so that
/// readers see the old file or the new one, never a part: written beside it, synced, renamed.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace_with(path, |file| {
        let f = std::io::BufWriter::new(file);
        let mut f = if is_gz(path) {
            let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::best());
            gz.write_all(bytes)?;
            gz.finish()?
        } else if is_xz(path) {
            // Preset 6: as small as 9 or 9e within a few percent on corpus files, at a tenth of
            // 9e's time and a seventh of 9's memory.
            let stream = liblzma::stream::Stream::new_easy_encoder(6, liblzma::stream::Check::Crc64)?;
            let mut xz = liblzma::write::XzEncoder::new_stream(f, stream);
            xz.write_all(bytes)?;
            xz.finish()?
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
    replace(path, fill, true)
}

/// [`replace_with`] for results that can be made again (`emulate`, `run`, `reference` and `gen`
/// outputs): renamed into place only when complete, so a killed run leaves the old file, but
/// not synced to disk first, as their JSONL form is not (an operating-system crash right after
/// may lose the new file). Syncing a 90 MB npz took as long as emulating its 50,000 tiles.
pub fn replace_output_with(path: &Path, fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>) -> std::io::Result<()> {
    replace(path, fill, false)
}

fn replace(path: &Path, fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>, sync: bool) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    // Unique per process and per call, so two threads replacing one file never share a
    // temporary (each rename is whole; the last one wins).
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let serial = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_file_name(format!(".{name}.{}.{serial}.tmp", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|mut file| {
        fill(&mut file)?;
        if sync {
            file.sync_all()?;
        }
        Ok(())
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
        let xz = dir.path().join("sub/corpus.jsonl.xz");
        append_lines_atomically(&xz, &["a".into()]).unwrap();
        append_lines_atomically(&xz, &["b".into()]).unwrap();
        assert_eq!(read_text(&xz).unwrap(), b"a\nb\n");
        assert!(std::fs::read(&xz).unwrap().starts_with(XZ_MAGIC));
        assert_eq!(jsonl_file(&dir.path().join("sub"), "corpus"), xz, "xz first");
        assert_eq!(jsonl_stem(&xz), "corpus");
        assert!(is_jsonl(&gz) && is_jsonl(&p) && !is_jsonl(Path::new("x.json.gz")));
        let names: Vec<String> = std::fs::read_dir(p.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
        assert_eq!(names.iter().filter(|n| !n.ends_with(".append-lock")).count(), 3, "{names:?}");
        let today = today_utc();
        assert_eq!(today.len(), 10);
        assert!(today.starts_with("20"), "{today}");
    }

    /// Threads of one process replacing and appending to one file at once: every appended line
    /// lands, and no two writers share a temporary.
    #[test]
    fn threads_appending_at_once_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log.jsonl");
        std::thread::scope(|s| {
            for t in 0..4 {
                let p = &p;
                s.spawn(move || {
                    for i in 0..25 {
                        append_lines_atomically(p, &[format!("{t}-{i}")]).unwrap();
                    }
                });
            }
        });
        let text = std::fs::read_to_string(&p).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines.sort_unstable();
        lines.dedup();
        assert_eq!(lines.len(), 100);
    }

    /// Two processes appending to one file at once lose no line: this test runs itself twice
    /// as child processes (`MMAFUZZ_APPEND_TO` names the file), each appending 40 lines one by
    /// one, xz-compressed so that every append is a slow read, decompress and rewrite.
    #[test]
    fn two_processes_appending_at_once_lose_nothing() {
        const NAME: &str = "store::tests::two_processes_appending_at_once_lose_nothing";
        if let Ok(path) = std::env::var("MMAFUZZ_APPEND_TO") {
            let who = std::env::var("MMAFUZZ_APPEND_WHO").unwrap();
            for i in 0..40 {
                append_lines_atomically(Path::new(&path), &[format!("{who}-{i}")]).unwrap();
            }
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log.jsonl.xz");
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = ["a", "b"]
            .iter()
            .map(|who| {
                std::process::Command::new(&exe)
                    .args(["--exact", NAME, "--test-threads", "1"])
                    .env("MMAFUZZ_APPEND_TO", &p)
                    .env("MMAFUZZ_APPEND_WHO", who)
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for mut c in children {
            assert!(c.wait().unwrap().success());
        }
        let text = String::from_utf8(read_text(&p).unwrap()).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 80, "{text}");
        lines.sort_unstable();
        lines.dedup();
        assert_eq!(lines.len(), 80);
    }
}
