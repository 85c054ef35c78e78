//! `#[profile]` on trait impls and generic impls compiles, with the other
//! items of the block as written, and the program runs.

use std::fmt::Display;

pub trait Shape {
    const SIDES: usize;
    type Unit;

    fn area(&self) -> f64;

    fn describe(&self) -> String {
        format!("{} sides, area {:.1}", Self::SIDES, self.area())
    }
}

pub struct Square(f64);

#[memprof::profile]
impl Shape for Square {
    const SIDES: usize = 4;
    type Unit = f64;

    fn area(&self) -> f64 {
        let sides = vec![self.0; Self::SIDES];
        sides[0] * sides[1]
    }

    // Overrides the default: profiled too.
    fn describe(&self) -> String {
        format!("square of area {:.1}", self.area())
    }
}

pub struct Labelled<T, const N: usize> {
    items: [T; N],
}

#[memprof::profile(scope = "process", gpu = false)]
impl<T: Display + Clone, const N: usize> Labelled<T, N>
where
    T: Default,
{
    pub fn new() -> Self {
        Labelled {
            items: std::array::from_fn(|_| T::default()),
        }
    }

    pub fn labels<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = String> + 'a {
        self.items.iter().map(move |item| format!("{prefix}{item}"))
    }

    pub async fn first(&self) -> Option<T> {
        self.items.first().cloned()
    }

    pub const fn len() -> usize {
        N
    }

    #[memprof::profile(limit = "1 MiB")]
    pub fn joined(&self) -> String {
        let parts: Vec<String> = self.items.iter().map(ToString::to_string).collect();
        parts.join(",")
    }
}

#[memprof::profile]
impl Drop for Square {
    fn drop(&mut self) {
        let _ = std::mem::take(&mut self.0);
    }
}

fn main() {
    let square = Square(2.0);
    assert_eq!(square.area(), 4.0);
    assert_eq!(square.describe(), "square of area 4.0");
    let labelled = Labelled::<u8, 2>::new();
    assert_eq!(labelled.labels("#").collect::<Vec<_>>(), ["#0", "#0"]);
    assert_eq!(labelled.joined(), "0,0");
    assert_eq!(Labelled::<u8, 2>::len(), 2);
    drop(labelled.first());
}
