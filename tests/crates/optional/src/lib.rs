//! A library that profiles its functions only when its own `profiling`
//! feature is on: without it, memprof, its macros and syn are not built.

#[cfg_attr(feature = "profiling", memprof::profile)]
pub fn parse(input: &str) -> Vec<u32> {
    let numbers = input.split(',').map(|s| s.trim().parse().unwrap_or(0)).collect();
    numbers
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses() {
        assert_eq!(super::parse("1, 2,x"), [1, 2, 0]);
    }
}
