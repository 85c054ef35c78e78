//! A strict reader of the `.dat` files that `mprof run` writes, for the
//! tests: every line must be one of memory_profiler's or memprof's, in
//! their exact number formats.

#![allow(dead_code)]

#[derive(Debug)]
pub struct Func {
    pub name: String,
    pub mem_start: f64,
    pub start: f64,
    pub mem_end: f64,
    pub end: f64,
    pub depth: u32,
}

/// Samples as (unix time, MiB).
pub type Series = Vec<(f64, f64)>;

/// A `CALLS` line: every call of one function at one depth.
#[derive(Debug)]
pub struct Totals {
    pub name: String,
    pub depth: u32,
    pub calls: u64,
    pub covered: f64,
}

/// What `parse` reads.
pub struct Recorded {
    pub mem: Series,
    pub heap: Series,
    pub funcs: Vec<Func>,
    pub totals: Vec<Totals>,
}

/// Parses the file strictly: every line must be one of memory_profiler's
/// or memprof's, in their exact number formats. `CALLS` lines come last.
pub fn parse_all(text: &str) -> Recorded {
    let decimals = |field: &str, n: usize| {
        let (_, frac) = field.split_once('.').unwrap_or_else(|| panic!("{field}"));
        assert_eq!(frac.len(), n, "{field} should have {n} decimals");
        field.parse::<f64>().unwrap()
    };
    let (mut mem, mut heap, mut funcs) = (Vec::new(), Vec::new(), Vec::new());
    let mut totals: Vec<Totals> = Vec::new();
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("CMDLINE "));
    assert!(text.ends_with('\n'));
    for line in lines {
        let fields: Vec<&str> = line.split(' ').collect();
        match fields[0] {
            "MEM" | "HEAP" => {
                assert_eq!(fields.len(), 3, "{line}");
                let sample = (decimals(fields[2], 4), decimals(fields[1], 6));
                if fields[0] == "MEM" {
                    &mut mem
                } else {
                    &mut heap
                }
                .push(sample);
            }
            "CALLS" => {
                assert_eq!(fields.len(), 5, "{line}");
                totals.push(Totals {
                    name: fields[1].to_string(),
                    depth: fields[2].parse().unwrap(),
                    calls: fields[3].parse().unwrap(),
                    covered: decimals(fields[4], 6),
                });
            }
            "FUNC" => {
                assert_eq!(fields.len(), 7, "{line}");
                assert!(totals.is_empty(), "FUNC after CALLS: {line}");
                funcs.push(Func {
                    name: fields[1].to_string(),
                    mem_start: decimals(fields[2], 4),
                    start: decimals(fields[3], 4),
                    mem_end: decimals(fields[4], 4),
                    end: decimals(fields[5], 4),
                    depth: fields[6].parse().unwrap(),
                });
            }
            _ => panic!("unexpected line {line:?}"),
        }
    }
    let by_time = |a: &(f64, f64), b: &(f64, f64)| a.0.total_cmp(&b.0);
    mem.sort_by(by_time);
    heap.sort_by(by_time);
    Recorded {
        mem,
        heap,
        funcs,
        totals,
    }
}

/// MEM, HEAP and FUNC, for the runs whose calls are all long and one
/// after another: each has its own `FUNC` line, which the `CALLS` totals
/// count.
pub fn parse(text: &str) -> (Series, Series, Vec<Func>) {
    let recorded = parse_all(text);
    for totals in &recorded.totals {
        let lines: Vec<&Func> = recorded
            .funcs
            .iter()
            .filter(|f| f.name == totals.name && f.depth == totals.depth)
            .collect();
        assert_eq!(lines.len() as u64, totals.calls, "{totals:?}");
        let summed: f64 = lines.iter().map(|f| f.end - f.start).sum();
        assert!(
            (totals.covered - summed).abs() < 1e-3 * lines.len() as f64,
            "{totals:?}"
        );
    }
    let functions: u64 = recorded.totals.iter().map(|t| t.calls).sum();
    assert_eq!(functions, recorded.funcs.len() as u64);
    (recorded.mem, recorded.heap, recorded.funcs)
}
