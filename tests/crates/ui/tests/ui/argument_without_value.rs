#[memprof::profile(max_retained)]
fn keeps() {}

#[memprof::profile(limit, gpu = false)]
fn peaks() {}

#[memprof::profile(scope)]
fn threads() {}

#[memprof::profile(gpu)]
fn devices() {}

#[memprof::profile(limit =)]
fn empty_value() {}

#[memprof::profile(max_retained = , scope = "thread")]
fn empty_value_then_more() {}

#[memprof::profile(limit "1 MiB")]
fn missing_equals() {}

fn main() {}
