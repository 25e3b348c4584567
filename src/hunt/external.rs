//! An external oracle: any simulator (MMA-Sim, an RTL simulation, another emulator) standing
//! where the GPU stands, as a child process that speaks the interchange over its stdin and
//! stdout. It is started once and kept for every batch.
//!
//! Two protocols, chosen by the side's name:
//! - `external:CMD` (JSONL): for each batch mmafuzz writes one case per line (the JSONL
//!   interchange, [`crate::case`]) and then an empty line; the oracle answers one line per case,
//!   in order, each the case with `"d"` added (as `mmafuzz emulate` writes them, or just
//!   `{"d":[...]}`), then an empty line.
//! - `external-npz:CMD` (binary): for each batch an 8-byte little-endian length and an npz
//!   of the tiles ([`crate::npz`]: a, b, c, header, meta on sparse tiles); the oracle answers
//!   with a length and an npz holding `d` (N×m×n, C's format, raw or typed; other members are
//!   ignored), or a length and `{"error": "..."}` JSON.
//!
//! CMD runs under `sh -c`; its stderr is the user's. End of input (stdin closed) means stop. A
//! line starting with `{"error":` instead of a result, an oracle that exits, or an answer of
//! the wrong size is an error naming the batch, never a silent mismatch.

use crate::case::MmaCase;
use crate::npz::Batch;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

/// How batches travel to the oracle and back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Jsonl,
    Npz,
}

/// A running oracle process.
pub struct External {
    pub command: String,
    pub protocol: Protocol,
    io: Mutex<Pipes>,
}

struct Pipes {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    batches: usize,
}

/// What went wrong with the oracle.
#[derive(Debug, thiserror::Error)]
#[error("external oracle `{command}`: {message}")]
pub struct ExternalError {
    pub command: String,
    pub message: String,
}

impl External {
    /// The oracle named by a side spec: `external:CMD` or `external-npz:CMD`; None when the
    /// spec names something else.
    pub fn from_spec(spec: &str) -> Option<Result<External, ExternalError>> {
        let (protocol, cmd) = if let Some(cmd) = spec.strip_prefix("external-npz:") {
            (Protocol::Npz, cmd)
        } else {
            (Protocol::Jsonl, spec.strip_prefix("external:")?)
        };
        Some(External::start(cmd.trim(), protocol))
    }

    /// Start `command` (under `sh -c`).
    pub fn start(command: &str, protocol: Protocol) -> Result<External, ExternalError> {
        let fail = |message: String| ExternalError { command: command.to_string(), message };
        if command.is_empty() {
            return Err(fail("no command after 'external:'".into()));
        }
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(command);
        // Its own process group: ending the oracle ends everything CMD started.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| fail(format!("cannot start: {e}")))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        Ok(External { command: command.to_string(), protocol, io: Mutex::new(Pipes { child, stdin, stdout, batches: 0 }) })
    }

    /// The command as findings and reports record it: [`relative_to`] the working directory, so
    /// that a command started from the repository reads as a user would give it there.
    pub fn recorded_command(&self) -> String {
        match std::env::current_dir() {
            Ok(cwd) => relative_to(&self.command, &cwd),
            Err(_) => self.command.clone(),
        }
    }

    fn fail(&self, message: impl Into<String>) -> ExternalError {
        ExternalError { command: self.command.clone(), message: message.into() }
    }

    /// D of every tile, from the oracle.
    pub fn execute(&self, tiles: &[MmaCase]) -> Result<Vec<Vec<u64>>, ExternalError> {
        if tiles.is_empty() {
            return Ok(vec![]);
        }
        // An npz holds tiles of one kind: a mixed batch goes as consecutive runs of one kind.
        let kind = |c: &MmaCase| (c.a_fmt, c.b_fmt, c.c_fmt, c.d_fmt, c.m, c.n, c.k, c.meta.is_some(), c.xor_pairs(), c.scales.as_ref().map(|s| (s.fmt, s.block)));
        if self.protocol == Protocol::Npz {
            if let Some(cut) = tiles.iter().position(|t| kind(t) != kind(&tiles[0])) {
                let mut d = self.execute(&tiles[..cut])?;
                d.extend(self.execute(&tiles[cut..])?);
                return Ok(d);
            }
        }
        let request = match self.protocol {
            Protocol::Jsonl => {
                let mut text = String::new();
                for t in tiles {
                    text.push_str(&Value::Object(t.to_json()).to_string());
                    text.push('\n');
                }
                text.push('\n');
                text.into_bytes()
            }
            Protocol::Npz => {
                let batch = Batch::from_cases(tiles).map_err(|e| self.fail(format!("the batch cannot be an npz: {e}")))?;
                let bytes = batch.to_bytes();
                let mut framed = (bytes.len() as u64).to_le_bytes().to_vec();
                framed.extend(bytes);
                framed
            }
        };
        let mut io = self.io.lock().expect("oracle lock");
        io.batches += 1;
        let batch_no = io.batches;
        let Pipes { child, stdin, stdout, .. } = &mut *io;
        let Some(input) = stdin.as_mut() else { return Err(self.fail("its input is closed")) };
        // Write on another thread while this one reads: a large batch would otherwise fill both
        // pipes and wait forever.
        let answer: Result<Vec<Vec<u64>>, Failure> = std::thread::scope(|s| {
            let writer = s.spawn(move || {
                ignore_sigpipe_here();
                input.write_all(&request).and_then(|_| input.flush())
            });
            let answer = match self.protocol {
                Protocol::Jsonl => read_lines(stdout, tiles),
                Protocol::Npz => read_npz(stdout, tiles),
            };
            if let Err(Failure { broken: true, .. }) = answer {
                // Out of step with the oracle for good, and it may be blocked writing what we no
                // longer read (so the writer is blocked too): end it.
                end(child);
            }
            let written = writer.join().expect("writer thread");
            match (answer, written) {
                (Ok(d), Ok(())) => Ok(d),
                (Err(e), _) => Err(e),
                (Ok(_), Err(e)) => Err(Failure { message: format!("cannot write the batch: {e}"), broken: true }),
            }
        });
        answer.map_err(|e| {
            if e.broken {
                stdin.take();
            }
            let status = child.try_wait().ok().flatten().map(|s| format!(" (it exited: {s})")).unwrap_or_default();
            self.fail(format!("batch {batch_no} of {} tiles: {}{status}", tiles.len(), e.message))
        })
    }
}

/// Why a batch failed, and whether the stream is out of step (the oracle is then ended) or
/// the oracle answered in full and can take the next batch.
struct Failure {
    message: String,
    broken: bool,
}

fn broken(message: String) -> Failure {
    Failure { message, broken: true }
}

fn said(message: String) -> Failure {
    Failure { message, broken: false }
}

/// One answer line per tile and an empty line; the first bad answer is the batch's error once
/// every line is read (the stream stays in step).
fn read_lines(out: &mut BufReader<ChildStdout>, tiles: &[MmaCase]) -> Result<Vec<Vec<u64>>, Failure> {
    let mut d = Vec::with_capacity(tiles.len());
    let mut first_bad = None;
    let mut line = String::new();
    for (i, t) in tiles.iter().enumerate() {
        line.clear();
        let n = out.read_line(&mut line).map_err(|e| broken(format!("cannot read its answer: {e}")))?;
        if n == 0 {
            return Err(broken(format!("its output ended after {i} of {} results", tiles.len())));
        }
        match parse_d(line.trim(), t) {
            Ok(x) => d.push(x),
            Err(m) => {
                first_bad.get_or_insert(format!("result {i}: {m}"));
            }
        }
    }
    line.clear();
    out.read_line(&mut line).map_err(|e| broken(format!("cannot read its answer: {e}")))?;
    if !line.trim().is_empty() {
        return Err(broken(format!("expected an empty line after {} results, got: {}", tiles.len(), clip(&line))));
    }
    match first_bad {
        Some(m) => Err(said(m)),
        None => Ok(d),
    }
}

fn parse_d(line: &str, t: &MmaCase) -> Result<Vec<u64>, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e}): {}", clip(line)))?;
    if let Some(e) = v.get("error") {
        return Err(format!("the oracle says: {}", e.as_str().map_or_else(|| e.to_string(), str::to_string)));
    }
    let Some(Value::Array(d)) = v.get("d") else { return Err(format!("no \"d\" array: {}", clip(line))) };
    if d.len() != t.m * t.n {
        return Err(format!("\"d\" has {} elements, the tile {}", d.len(), t.m * t.n));
    }
    d.iter()
        .map(|x| {
            x.as_str()
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .filter(|b| b & !t.d_fmt.mask() == 0)
                .ok_or_else(|| format!("\"d\" element {x} is not a {} bit pattern in hex", t.d_fmt))
        })
        .collect()
}

/// A length and an npz holding d (or a length and an error in JSON).
fn read_npz(out: &mut BufReader<ChildStdout>, tiles: &[MmaCase]) -> Result<Vec<Vec<u64>>, Failure> {
    let mut len = [0u8; 8];
    out.read_exact(&mut len).map_err(|e| broken(format!("no answer ({e})")))?;
    let len = u64::from_le_bytes(len);
    if len > 1 << 40 {
        return Err(broken(format!("an answer of {len} bytes: not a length")));
    }
    let mut bytes = vec![0u8; len as usize];
    out.read_exact(&mut bytes).map_err(|e| broken(format!("its answer ended early ({e})")))?;
    if bytes.starts_with(b"{") {
        let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let e = v.get("error").map_or_else(|| clip(&String::from_utf8_lossy(&bytes)), |e| e.as_str().map_or_else(|| e.to_string(), str::to_string));
        return Err(said(format!("the oracle says: {e}")));
    }
    let t = &tiles[0];
    crate::npz::read_d(&bytes, "the oracle's answer", t.d_fmt, tiles.len(), t.m, t.n).map_err(|e| said(e.to_string()))
}

impl Drop for External {
    /// Close its input (the signal to stop) and wait for it, at most a few seconds.
    fn drop(&mut self) {
        if let Ok(io) = self.io.get_mut() {
            io.stdin.take();
            for _ in 0..100 {
                if !matches!(io.child.try_wait(), Ok(None)) {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            end(&mut io.child);
        }
    }
}

/// Kill the oracle and whatever it started (its process group), and reap it.
fn end(child: &mut Child) {
    #[cfg(unix)]
    // SAFETY: a signal to the process group this oracle leads (process_group(0) at spawn).
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Block SIGPIPE on the calling thread (the batch writer): a write to an oracle that has
/// exited then fails with EPIPE and is reported, instead of the signal ending mmafuzz (whose
/// main restores SIGPIPE's default so that `mmafuzz ... | head` ends quietly).
fn ignore_sigpipe_here() {
    #[cfg(unix)]
    // SAFETY: a signal mask of this thread only, built from an emptied set.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// `command` with each whitespace-separated token that is an absolute path inside `dir` written
/// relative to `dir` (`.` for `dir` itself); every other token, and the whitespace between
/// tokens, as given. A path is inside `dir` by whole components: `/a/bc` is not inside `/a/b`.
pub fn relative_to(command: &str, dir: &Path) -> String {
    let mut out = String::with_capacity(command.len());
    let mut rest = command;
    while !rest.is_empty() {
        let token_at = rest.find(|c: char| !c.is_whitespace()).unwrap_or(rest.len());
        out.push_str(&rest[..token_at]);
        rest = &rest[token_at..];
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let token = &rest[..end];
        let path = Path::new(token);
        match path.strip_prefix(dir).ok().filter(|_| path.is_absolute() && dir.is_absolute()).and_then(|r| r.to_str()) {
            Some("") => out.push('.'),
            Some(relative) => out.push_str(relative),
            None => out.push_str(token),
        }
        rest = &rest[end..];
    }
    out
}

fn clip(s: &str) -> String {
    let s = s.trim();
    if s.len() <= 120 {
        return s.to_string();
    }
    let cut = (0..=120).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0);
    format!("{}...", &s[..cut])
}

/// The oracle's half of the protocol (what `mmafuzz serve` runs): answer every batch read from
/// `input` on `output` with `run`, until the input ends; returns the number of batches. A
/// batch that cannot be read or run is answered with an error, and the stream goes on.
pub fn serve(
    protocol: Protocol,
    mut input: impl BufRead,
    mut output: impl Write,
    run: impl Fn(&[MmaCase]) -> Result<Vec<Vec<u64>>, String>,
) -> std::io::Result<usize> {
    let mut batches = 0;
    loop {
        match protocol {
            Protocol::Jsonl => {
                let mut lines = Vec::new();
                let mut line = String::new();
                loop {
                    line.clear();
                    if input.read_line(&mut line)? == 0 || line.trim().is_empty() {
                        break;
                    }
                    lines.push(MmaCase::from_json_line(line.trim()).map_err(|e| e.to_string()));
                }
                if lines.is_empty() {
                    if line.is_empty() {
                        return Ok(batches);
                    }
                    continue;
                }
                let cases: Vec<MmaCase> = lines.iter().filter_map(|l| l.as_ref().ok().cloned()).collect();
                let mut ds = run(&cases).map(|d| d.into_iter());
                for l in &lines {
                    let answer = match (l, &mut ds) {
                        (Err(e), _) => serde_json::json!({ "error": e }),
                        (Ok(_), Err(e)) => serde_json::json!({ "error": e }),
                        (Ok(c), Ok(ds)) => {
                            let d = ds.next().expect("one result per case");
                            serde_json::json!({ "d": d.iter().map(|&b| crate::case::hex(b, c.d_fmt)).collect::<Vec<_>>() })
                        }
                    };
                    writeln!(output, "{answer}")?;
                }
                writeln!(output)?;
            }
            Protocol::Npz => {
                let mut len = [0u8; 8];
                match input.read_exact(&mut len) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(batches),
                    Err(e) => return Err(e),
                }
                let mut bytes = vec![0u8; u64::from_le_bytes(len) as usize];
                input.read_exact(&mut bytes)?;
                let answer = Batch::from_bytes(&bytes, "the batch")
                    .map_err(|e| e.to_string())
                    .and_then(|mut batch| {
                        let cases = batch.cases().map_err(|e| e.to_string())?;
                        batch.set_d(0, &run(&cases)?);
                        Ok(batch.to_bytes())
                    })
                    .unwrap_or_else(|e| serde_json::json!({ "error": e }).to_string().into_bytes());
                output.write_all(&(answer.len() as u64).to_le_bytes())?;
                output.write_all(&answer)?;
            }
        }
        output.flush()?;
        batches += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::relative_to;
    use std::path::Path;

    #[test]
    fn absolute_paths_inside_the_directory_are_written_relative_to_it() {
        let repo = Path::new("/src/mmafuzz");
        assert_eq!(
            relative_to("/opt/venv/bin/python /src/mmafuzz/scripts/mmasim-oracle.py --arch 'CDNA1' --protocol npz", repo),
            "/opt/venv/bin/python scripts/mmasim-oracle.py --arch 'CDNA1' --protocol npz",
            "a token outside stays as given"
        );
        assert_eq!(relative_to("sh  /src/mmafuzz\t/src/mmafuzz/", repo), "sh  .\t.", "the directory itself, spacing kept");
        assert_eq!(relative_to("cat /src/mmafuzzer/x /src/mmafuzz/a/../b", repo), "cat /src/mmafuzzer/x a/../b", "whole components only");
        assert_eq!(relative_to(" python3 scripts/x.py --out=/src/mmafuzz/o ", repo), " python3 scripts/x.py --out=/src/mmafuzz/o ", "relative tokens and options as given");
        assert_eq!(relative_to("/src/mmafuzz/x", Path::new("src/mmafuzz")), "/src/mmafuzz/x", "a relative directory names nothing");
        assert_eq!(relative_to("", repo), "");
    }
}
