//! `mmafuzz library compare-gpus`: where two GPUs' kernel choices compute different bits, on the
//! shapes the first GPU's tables hold (traced there): for each, the second GPU's kernel (traced
//! in its table, or its predictor's answer, said which) and whether the two schedules are the
//! same (same K slices, reduction, summation tree, epilogue: the same bits) or differ.

use mmafuzz::library::fit::plan_of;
use mmafuzz::library::gemm::{ConfigSource, LibraryEmulator};
use mmafuzz::library::LibraryModel;
use std::collections::BTreeMap;
use std::process::ExitCode;

#[derive(Default)]
struct Count {
    shapes: usize,
    /// The first GPU's kernel has no schedule in the model (declined there): not compared.
    unplanned: usize,
    same: usize,
    /// Differ where the second GPU's kernel is traced / predicted.
    differ_traced: usize,
    differ_predicted: usize,
    /// The second GPU declines the shape (or its kernel has no schedule).
    declined: usize,
}

pub fn compare(from: &str, to: &str, only: Option<&str>, list: usize) -> anyhow::Result<ExitCode> {
    let prefix = format!("{from}:");
    let names: Vec<&str> = LibraryModel::embedded_names().into_iter().filter(|n| n.starts_with(&prefix) && only.is_none_or(|o| n.ends_with(o))).collect();
    anyhow::ensure!(!names.is_empty(), "no library model named {from}:{}", only.unwrap_or("..."));
    println!("# mmafuzz library compare-gpus --from {from} --to {to}{}", only.map_or(String::new(), |o| format!(" --path {o}")));
    println!("# on every shape of the {from} tables; {to}'s kernel from its table (traced) or its predictor (predicted)");
    println!("{:<46} {:<12} {:>7} {:>7} {:>7} {:>14} {:>16} {:>9}", "path", "call", "shapes", "same", "differ", "differ: traced", "differ: predicted", "declined");
    let mut listed = Vec::new();
    for name in names {
        let path = &name[prefix.len()..];
        let a = LibraryModel::load(name, None)?;
        let mut b = LibraryModel::load(&format!("{to}:{path}"), None)?;
        b.use_predictor = true;
        let emu = LibraryEmulator::new(&b);
        let mut rows: BTreeMap<&'static str, Count> = BTreeMap::new();
        for ((m, n, k, op), cfg) in a.table.iter() {
            let c = rows.entry(op.name()).or_default();
            c.shapes += 1;
            let Ok(pa) = plan_of(&a.rules, op, (m, n, k), cfg) else {
                c.unplanned += 1;
                continue;
            };
            let Ok((cb, source)) = emu.choose((m, n, k), op) else {
                c.declined += 1;
                continue;
            };
            let Ok(pb) = plan_of(&b.rules, op, (m, n, k), cb) else {
                c.declined += 1;
                continue;
            };
            if pa == pb {
                c.same += 1;
                continue;
            }
            let traced = source == ConfigSource::Traced;
            if traced {
                c.differ_traced += 1;
            } else {
                c.differ_predicted += 1;
            }
            if listed.len() < list && (traced || listed.len() < list / 2) {
                listed.push(format!(
                    "  {path} {} {m}x{n}x{k}: {from} {cfg} ({} chain(s)), {to} {cb} ({} chain(s), {})",
                    op.name(),
                    pa.slices.len(),
                    pb.slices.len(),
                    if traced { "traced" } else { "predicted" }
                ));
            }
        }
        for (op, c) in rows {
            println!("{path:<46} {op:<12} {:>7} {:>7} {:>7} {:>14} {:>16} {:>9}", c.shapes - c.unplanned, c.same, c.differ_traced + c.differ_predicted, c.differ_traced, c.differ_predicted, c.declined);
        }
    }
    if !listed.is_empty() {
        println!("differing shapes (the first {}):", listed.len());
        for l in &listed {
            println!("{l}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
