//! The report as a picture (SVG): a legend, the instruction paths' knobs against the published
//! claims (cell text wrapped, never clipped; the full text also in each cell's tooltip), and
//! the library paths' validated shapes.

use super::library::{LibraryRow, SHAPE_CLASSES};
use super::{Row, COLUMNS};

/// Characters per line of a cell (11 px monospace: about 6.6 px a character).
const CHAR_W: f64 = 6.6;
const LINE_H: usize = 14;
const MAX_LINES: usize = 4;

fn esc(t: &str) -> String {
    t.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// `text` in lines of at most `width` characters, broken at spaces (a longer word is cut);
/// at most [`MAX_LINES`], the last ending in "..." when there was more.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word = word.to_string();
        while word.chars().count() > width {
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            let head: String = word.chars().take(width).collect();
            word = word.chars().skip(width).collect();
            lines.push(head);
        }
        if line.is_empty() {
            line = word;
        } else if line.chars().count() + 1 + word.chars().count() <= width {
            line.push(' ');
            line.push_str(&word);
        } else {
            lines.push(std::mem::replace(&mut line, word));
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    if lines.len() > MAX_LINES {
        lines.truncate(MAX_LINES);
        let last = &mut lines[MAX_LINES - 1];
        let keep: String = last.chars().take(width.saturating_sub(3)).collect();
        *last = format!("{keep}...");
    }
    lines
}

/// A cell: a filled box, its lines (the first `bold` of them in bold), and a tooltip.
fn cell(s: &mut String, x: usize, y: usize, w: usize, h: usize, fill: &str, lines: &[(String, bool)], tooltip: &str) {
    s.push_str(&format!("<g><title>{}</title><rect x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" fill=\"{fill}\" stroke=\"white\"/>", esc(tooltip)));
    for (i, (t, bold)) in lines.iter().enumerate() {
        let weight = if *bold { " font-weight=\"bold\"" } else { "" };
        s.push_str(&format!("<text x=\"{}\" y=\"{}\"{weight}>{}</text>", x + 4, y + 14 + i * LINE_H, esc(t)));
    }
    s.push_str("</g>\n");
}

fn swatch(s: &mut String, x: usize, y: usize, fill: &str, label: &str) -> usize {
    s.push_str(&format!("<rect x=\"{x}\" y=\"{}\" width=\"14\" height=\"14\" fill=\"{fill}\"/><text x=\"{}\" y=\"{}\">{}</text>\n", y - 11, x + 19, y, esc(label)));
    x + 19 + (label.chars().count() as f64 * CHAR_W) as usize + 24
}

const AGREES: &str = "#9fd89f";
const CONTRADICTS: &str = "#f09a9a";
const NO_CLAIM: &str = "#e4e4e4";
const DECLINED: &str = "#f3d28a";

/// Green at 100%, towards red as the fraction falls.
fn shade(f: f64) -> String {
    format!("rgb({},{},{})", (255.0 * (1.0 - f)) as u8, (80.0 + 150.0 * f) as u8, 90)
}

/// The whole picture: instruction paths, then library paths (when `library` has rows).
pub fn svg(rows: &[Row], library: &[LibraryRow]) -> String {
    let (label_w, corpus_w, cell_w) = (280, 110, 200);
    let chars = ((cell_w - 8) as f64 / CHAR_W) as usize;
    let width = label_w + corpus_w + cell_w * COLUMNS.len() + 10;
    let mut body = String::new();
    let mut y = 20;
    body.push_str(&format!("<text x=\"10\" y=\"{y}\" font-size=\"15\" font-weight=\"bold\">Hopper (sm_90) instruction paths: the inferred model's knobs against FTTN Table III's H100 rows</text>\n"));
    y += 24;
    let mut x = 10;
    x = swatch(&mut body, x, y, AGREES, "the model agrees with the published claim");
    x = swatch(&mut body, x, y, CONTRADICTS, "the model contradicts it (the GPU data decide)");
    x = swatch(&mut body, x, y, NO_CLAIM, "no published claim");
    swatch(&mut body, x, y, &shade(1.0), "corpus column: share of recorded GPU tiles reproduced bit for bit (red: fewer)");
    y += 14;
    body.push_str(&format!(
        "<text x=\"10\" y=\"{}\" fill=\"#555\">Each cell: the model's knob, then the claim (✓ agrees, ✗ contradicts). Hover a cell for its full text; report.md has every cell in full.</text>\n",
        y + 4
    ));
    y += 26;
    let headers: Vec<&str> = ["instruction path (model origin)", "corpus"].into_iter().chain(COLUMNS.iter().copied()).collect();
    for (i, h) in headers.iter().enumerate() {
        let hx = if i == 0 { 10 } else if i == 1 { label_w } else { label_w + corpus_w + (i - 2) * cell_w };
        body.push_str(&format!("<text x=\"{}\" y=\"{y}\" font-weight=\"bold\">{}</text>\n", hx + 4, esc(h)));
    }
    y += 8;
    for r in rows {
        let contents: Vec<Vec<(String, bool)>> = r
            .cells
            .iter()
            .map(|c| {
                let mut lines: Vec<(String, bool)> = wrap(&c.value, chars).into_iter().map(|l| (l, false)).collect();
                if let Some((claim, ok)) = c.claim {
                    lines.push((format!("{} FTTN: {claim}", if ok { "✓" } else { "✗" }), !ok));
                }
                lines
            })
            .collect();
        let lines = contents.iter().map(Vec::len).max().unwrap_or(1).max(2);
        let h = 8 + lines * LINE_H;
        let tooltip = format!("{} ({})", r.path.id, r.model);
        let mut label: Vec<(String, bool)> = wrap(r.path.id, ((label_w - 8) as f64 / CHAR_W) as usize).into_iter().map(|l| (l, false)).collect();
        label.push((format!("({})", r.origin), false));
        let h = h.max(8 + label.len() * LINE_H);
        cell(&mut body, 0, y, label_w, h, "white", &label, &tooltip);
        let (fill, text) = match r.stats.as_ref().map(|st| (st.tile_fraction(), st.tiles)) {
            Some((f, tiles)) => (shade(f), vec![(format!("{:.1}%", 100.0 * f), true), (format!("of {tiles} tiles"), false)]),
            None => (NO_CLAIM.to_string(), vec![("no corpus".to_string(), false)]),
        };
        cell(&mut body, label_w, y, corpus_w, h, &fill, &text, &format!("{}: {}", r.path.id, text.iter().map(|t| t.0.as_str()).collect::<Vec<_>>().join(" ")));
        for (i, (c, lines)) in r.cells.iter().zip(&contents).enumerate() {
            let fill = match c.claim {
                Some((_, true)) => AGREES,
                Some((_, false)) => CONTRADICTS,
                None => NO_CLAIM,
            };
            let claim = c.claim.map_or(String::new(), |(p, ok)| format!(" | FTTN: {p} ({})", if ok { "agrees" } else { "contradicts" }));
            cell(&mut body, label_w + corpus_w + i * cell_w, y, cell_w, h, fill, lines, &format!("{} {}: {}{claim}", r.path.id, COLUMNS[i], c.value));
        }
        y += h;
    }

    if !library.is_empty() {
        y += 36;
        body.push_str(&format!("<text x=\"10\" y=\"{y}\" font-size=\"15\" font-weight=\"bold\">Library GEMMs (cuBLAS/cuBLASLt as PyTorch calls them): the recorded shapes each model was validated on</text>\n"));
        y += 24;
        let mut x = 10;
        x = swatch(&mut body, x, y, &shade(1.0), "every recorded GEMM bit for bit");
        x = swatch(&mut body, x, y, DECLINED, "some declined (kernel not modelled yet), none wrong");
        x = swatch(&mut body, x, y, CONTRADICTS, "some differ from the GPU");
        swatch(&mut body, x, y, NO_CLAIM, "none recorded");
        y += 26;
        let lib_w = (width - label_w) / SHAPE_CLASSES.len();
        let lib_chars = ((lib_w - 8) as f64 / CHAR_W) as usize;
        body.push_str(&format!("<text x=\"14\" y=\"{y}\" font-weight=\"bold\">library path (GPUs)</text>\n"));
        for (i, class) in SHAPE_CLASSES.iter().enumerate() {
            body.push_str(&format!("<text x=\"{}\" y=\"{y}\" font-weight=\"bold\">{}</text>\n", label_w + i * lib_w + 4, esc(class)));
        }
        y += 8;
        for r in library {
            let contents: Vec<Vec<(String, bool)>> = SHAPE_CLASSES
                .iter()
                .map(|class| match r.cells.get(class) {
                    None => vec![("none recorded".to_string(), false)],
                    Some(c) => {
                        let mut lines = vec![(format!("{} of {} exact", c.exact, c.gemms), true)];
                        if c.declined + c.inexact() > 0 {
                            lines.push((format!("{} declined, {} differ", c.declined, c.inexact()), false));
                        }
                        lines.extend(wrap(&c.ranges(), lib_chars).into_iter().map(|l| (l, false)));
                        lines
                    }
                })
                .collect();
            let lines = contents.iter().map(Vec::len).max().unwrap_or(1).max(2);
            let h = 8 + lines * LINE_H;
            let gpus = r.gpus.iter().map(|g| g.trim_start_matches("NVIDIA ").to_string()).collect::<Vec<_>>().join(", ");
            let mut label: Vec<(String, bool)> = wrap(&r.path, ((label_w - 8) as f64 / CHAR_W) as usize).into_iter().map(|l| (l, false)).collect();
            label.push((format!("({gpus})"), false));
            cell(&mut body, 0, y, label_w, h.max(8 + label.len() * LINE_H), "white", &label, &format!("{} on {}", r.path, r.gpus.join(", ")));
            for (i, (class, lines)) in SHAPE_CLASSES.iter().zip(&contents).enumerate() {
                let fill = match r.cells.get(class) {
                    None => NO_CLAIM.to_string(),
                    Some(c) if c.inexact() > 0 => CONTRADICTS.to_string(),
                    Some(c) if c.declined > 0 => DECLINED.to_string(),
                    Some(_) => shade(1.0),
                };
                let tip = lines.iter().map(|l| l.0.as_str()).collect::<Vec<_>>().join("; ");
                cell(&mut body, label_w + i * lib_w, y, lib_w, h.max(8 + label.len() * LINE_H), &fill, lines, &format!("{} {class}: {tip}", r.path));
            }
            y += h.max(8 + label.len() * LINE_H);
        }
    }
    let height = y + 20;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"DejaVu Sans Mono, monospace\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n{body}</svg>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wrapping_keeps_every_word_and_the_width() {
        let text = "truncate align, rz into f32, window floor emin-7";
        let lines = wrap(text, 20);
        assert!(lines.iter().all(|l| l.chars().count() <= 20), "{lines:?}");
        assert_eq!(lines.join(" "), text);
        // A word longer than the width is cut, not lost; too many lines end in "...".
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        let long = wrap(&"word ".repeat(40), 10);
        assert_eq!(long.len(), 4);
        assert!(long[3].ends_with("..."), "{long:?}");
    }
}
