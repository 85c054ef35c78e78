//! Text rendering: byte figures and line tables.

use crate::config::{RenderSettings, Unit};
use crate::report::FunctionReport;
use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::style::HorizontalLine;
use tabled::settings::{Alignment, Modify, Style};

/// Writes a byte count in `settings`' unit, e.g. `1.5 MiB`, `-512 B`.
pub fn bytes(n: i64, settings: &RenderSettings) -> String {
    let unit = settings.unit.unwrap_or_else(|| auto_unit(n.unsigned_abs()));
    if unit == Unit::B {
        return format!("{n} B");
    }
    let value = n as f64 / unit.size();
    format!("{value:.prec$} {}", unit.name(), prec = settings.precision)
}

fn auto_unit(n: u64) -> Unit {
    match n {
        0..=1023 => Unit::B,
        1024..=1_048_575 => Unit::KiB,
        1_048_576..=1_073_741_823 => Unit::MiB,
        _ => Unit::GiB,
    }
}

/// A function's table in memory_profiler's shape.
pub(crate) fn table(
    function: &FunctionReport,
    aggregated: bool,
    settings: &RenderSettings,
) -> String {
    let gpu = function.gpu.is_some();
    let mut builder = Builder::default();
    let mut header = vec!["Line #", "Mem usage", "Increment", "Peak", "Occurrences"];
    if gpu {
        header.extend(["GPU usage", "GPU increment"]);
    }
    header.push("Line Contents");
    builder.push_record(header);
    let fn_row = function.lines.iter().position(|l| l.increment.is_some());
    for (i, line) in function.lines.iter().enumerate() {
        if let Some(min) = settings.min_increment {
            let loud = line.increment.is_some_and(|v| v.unsigned_abs() >= min)
                || line.peak.is_some_and(|v| v >= min);
            if !loud && Some(i) != fn_row {
                continue;
            }
        }
        let figure = |v: Option<i64>| v.map(|v| bytes(v, settings)).unwrap_or_default();
        let mut record = vec![
            line.line.to_string(),
            figure(line.mem_usage.map(|v| v as i64)),
            figure(line.increment),
            figure(line.peak.map(|v| v as i64)),
            if line.increment.is_some() {
                line.occurrences.to_string()
            } else {
                String::new()
            },
        ];
        if gpu {
            record.push(figure(line.gpu_usage.map(|v| v as i64)));
            record.push(figure(line.gpu_increment));
        }
        // NOTE: tabs would throw the columns off.
        record.push(line.contents.replace('\t', "    "));
        builder.push_record(record);
    }
    let figures = if gpu { 7 } else { 5 };
    let mut table = builder.build();
    table
        .with(Style::blank().horizontals([(1, HorizontalLine::new('=').intersection('='))]))
        .with(Modify::new(Columns::new(0..figures)).with(Alignment::right()))
        .with(Modify::new(Columns::new(figures..)).with(Alignment::left()));

    let mut out = format!("Filename: {}   Function: {}", function.file, function.name);
    if aggregated {
        out.push_str(&format!(
            "   Calls: {}{}",
            function.calls,
            if function.calls == 1 {
                ""
            } else {
                " (aggregated)"
            }
        ));
    }
    out.push('\n');
    if let Some(description) = &function.gpu {
        out.push_str(description);
        out.push('\n');
    }
    out.push('\n');
    for line in table.to_string().lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_units_are_binary() {
        let s = RenderSettings::default();
        assert_eq!(bytes(0, &s), "0 B");
        assert_eq!(bytes(1023, &s), "1023 B");
        assert_eq!(bytes(1024, &s), "1.0 KiB");
        assert_eq!(bytes(-1536, &s), "-1.5 KiB");
        assert_eq!(bytes(8 << 20, &s), "8.0 MiB");
        assert_eq!(bytes(3 << 30, &s), "3.0 GiB");
    }

    #[test]
    fn fixed_unit_and_precision() {
        let s = RenderSettings {
            unit: Some(Unit::MiB),
            precision: 3,
            min_increment: None,
        };
        assert_eq!(bytes(1 << 19, &s), "0.500 MiB");
        let s = RenderSettings {
            unit: Some(Unit::B),
            precision: 3,
            min_increment: None,
        };
        assert_eq!(bytes(1 << 20, &s), "1048576 B");
    }
}
