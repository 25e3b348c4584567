//! Reading case streams and writing result files atomically.

use anyhow::Context;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Lines of a file or stdin (`-`).
pub fn open_input(path: &Path) -> anyhow::Result<Box<dyn BufRead>> {
    if path == Path::new("-") {
        return Ok(Box::new(BufReader::new(std::io::stdin())));
    }
    let f = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    Ok(Box::new(BufReader::new(f)))
}

/// An output that becomes visible only when finished: a file is written beside its final name
/// and renamed into place by [`AtomicOutput::commit`]; a dropped, uncommitted output leaves the
/// old file untouched.
pub struct AtomicOutput {
    writer: Box<dyn Write>,
    paths: Option<(PathBuf, PathBuf)>,
}

impl AtomicOutput {
    pub fn create(path: &Path) -> anyhow::Result<Self> {
        if path == Path::new("-") {
            return Ok(AtomicOutput { writer: Box::new(BufWriter::new(std::io::stdout())), paths: None });
        }
        let name = path.file_name().with_context(|| format!("{} is not a file path", path.display()))?;
        let tmp = path.with_file_name(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id()));
        let f = File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
        Ok(AtomicOutput { writer: Box::new(BufWriter::new(f)), paths: Some((tmp, path.to_path_buf())) })
    }

    pub fn line(&mut self, s: &str) -> anyhow::Result<()> {
        self.writer.write_all(s.as_bytes())?;
        self.writer.write_all(b"\n")?;
        Ok(())
    }

    pub fn commit(mut self) -> anyhow::Result<()> {
        self.writer.flush()?;
        drop(std::mem::replace(&mut self.writer, Box::new(std::io::sink())));
        if let Some((tmp, dest)) = self.paths.take() {
            std::fs::rename(&tmp, &dest).with_context(|| format!("cannot move result into {}", dest.display()))?;
        }
        Ok(())
    }
}

impl Drop for AtomicOutput {
    fn drop(&mut self) {
        if let Some((tmp, _)) = self.paths.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}
