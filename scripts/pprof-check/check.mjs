// Decodes memprof's pprof profiles with Datadog's pprof-format (a reader
// memprof did not write) and checks each against the JSON report of the
// same run: per profiled line, the samples whose stacks hold the line add
// up, to the byte, to the line's row: its sites (those that do not pass
// through another profiled function, whose own lines hold them), or the
// line itself without sites. A line's stacks are those of its own share and
// of the lines it encloses (a loop's body), so this holds for every line
// whatever memprof reads of their nesting. The
// sample types are Go's heap ones, inuse_space the default; a sampled run
// records its mean as the period; every location names a function, a file
// and a line. A function's full name, as the JSON names it, is its
// system_name; its name is the form pprof prints whole, without angle
// brackets (docs/reference.md).
//
// Usage: node check.mjs REPORT.json PROFILE.pb.gz MEAN [REPORT PROFILE MEAN ...]
// (MEAN: the sampling mean in bytes, or 1 for an exact run).
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { Profile } from 'pprof-format';

const TYPES = [['alloc_objects', 'count'], ['alloc_space', 'bytes'],
  ['inuse_objects', 'count'], ['inuse_space', 'bytes']];

function fail(message) {
  console.error(`pprof-check: ${message}`);
  process.exit(1);
}

/// Per profiled line (`function\tfile\tline`), the four values the JSON
/// report gives it: its sites' figures, or its own without sites. The
/// `fn` row (the first with figures) holds the whole call and is left out.
function expected(report) {
  const profiled = new Set(report.functions
    .filter((f) => f.lines.some((l) => l.sites !== null)).map((f) => f.name));
  const lines = new Map();
  for (const f of report.functions) {
    const rows = f.lines.filter((l) => l.increment !== null).slice(1);
    for (const row of rows) {
      const key = `${f.name}\t${f.file}\t${row.line}`;
      const sum = lines.get(key) ?? [0n, 0n, 0n, 0n];
      if (row.sites !== null) {
        for (const site of row.sites) {
          if (site.frames.some((frame) => profiled.has(frame.function))) continue;
          sum[0] += BigInt(site.allocations);
          sum[1] += BigInt(site.allocated_bytes);
          // In use: Live where the report has it (as memprof's `in_use`).
          if (site.in_use_bytes != null && site.in_use_allocations != null) {
            sum[2] += BigInt(site.in_use_allocations);
            sum[3] += BigInt(site.in_use_bytes);
          } else {
            sum[3] += BigInt(Math.max(site.live_bytes, 0));
          }
        }
      } else {
        sum[0] += BigInt(row.allocations ?? 0);
        sum[1] += BigInt(row.allocated_bytes ?? 0);
        if (row.in_use_bytes != null && row.in_use_allocations != null) {
          sum[2] += BigInt(row.in_use_allocations);
          sum[3] += BigInt(row.in_use_bytes);
        } else {
          sum[3] += BigInt(Math.max(row.increment ?? 0, 0));
        }
      }
      lines.set(key, sum);
    }
  }
  return lines;
}

function check(reportPath, profilePath, mean) {
  const report = JSON.parse(readFileSync(reportPath, 'utf8'));
  const bytes = readFileSync(profilePath);
  if (bytes[0] !== 0x1f || bytes[1] !== 0x8b) fail(`${profilePath}: not gzipped`);
  const profile = Profile.decode(gunzipSync(bytes));
  const str = (i) => profile.stringTable.strings[Number(i)];
  const types = profile.sampleType.map((t) => [str(t.type), str(t.unit)]);
  if (JSON.stringify(types) !== JSON.stringify(TYPES)) {
    fail(`${profilePath}: sample types ${JSON.stringify(types)}`);
  }
  if (str(profile.defaultSampleType) !== 'inuse_space') {
    fail(`${profilePath}: default sample type ${str(profile.defaultSampleType)}`);
  }
  const period = [str(profile.periodType?.type), str(profile.periodType?.unit)];
  if (period.join('/') !== 'space/bytes' || BigInt(profile.period) !== BigInt(mean)) {
    fail(`${profilePath}: period ${period.join('/')} ${profile.period}, expected space/bytes ${mean}`);
  }
  const functions = new Map(profile.function.map((f) => [BigInt(f.id), f]));
  const locations = new Map();
  for (const location of profile.location) {
    if (location.line.length === 0) fail(`${profilePath}: location ${location.id} has no line`);
    const frames = location.line.map((line) => {
      const f = functions.get(BigInt(line.functionId));
      if (!f) fail(`${profilePath}: location ${location.id} names no function`);
      const frame = { name: str(f.systemName), file: str(f.filename), line: Number(line.line) };
      if (!frame.name || !str(f.name) || !frame.file || !(frame.line > 0)) {
        fail(`${profilePath}: location ${location.id} lacks a name, file or line: ${JSON.stringify(frame)}`);
      }
      if (str(f.name).includes("<")) {
        fail(`${profilePath}: function ${f.id}'s name ${str(f.name)} has an angle bracket, whose group pprof strips`);
      }
      return frame;
    });
    locations.set(BigInt(location.id), frames);
  }
  const want = expected(report);
  const got = new Map([...want.keys()].map((key) => [key, [0n, 0n, 0n, 0n]]));
  for (const sample of profile.sample) {
    const stack = sample.locationId.flatMap((id) => {
      const frames = locations.get(BigInt(id));
      if (!frames) fail(`${profilePath}: a sample names location ${id}, not listed`);
      return frames;
    });
    const keys = new Set(stack.map((frame) => `${frame.name}\t${frame.file}\t${frame.line}`));
    let lines = 0;
    for (const key of keys) {
      const sum = got.get(key);
      if (!sum) continue;
      lines += 1;
      // int64 as profile.proto declares them: pprof-format reads a
      // negative value's 10-byte varint as a large unsigned number.
      sample.value.forEach((v, i) => { sum[i] += BigInt.asIntN(64, BigInt(v)); });
    }
    if (lines === 0) fail(`${profilePath}: a sample's stack holds no profiled line: ${JSON.stringify(stack)}`);
  }
  const show = (m) => JSON.stringify([...m].sort(), (_, v) => (typeof v === 'bigint' ? v.toString() : v));
  if (show(got) !== show(want)) {
    fail(`${profilePath} does not add up to ${reportPath}:\n  profile ${show(got)}\n  report  ${show(want)}`);
  }
  const total = profile.sample.reduce((a, s) => a + BigInt.asIntN(64, BigInt(s.value[1])), 0n);
  console.log(`pprof-check: ${profilePath}: ${profile.sample.length} samples, ${profile.location.length} locations, `
    + `${got.size} profiled lines as in ${reportPath}, ${total} bytes allocated in all`);
}

const args = process.argv.slice(2);
if (args.length === 0 || args.length % 3 !== 0) fail('usage: node check.mjs REPORT PROFILE MEAN [...]');
for (let i = 0; i < args.length; i += 3) check(args[i], args[i + 1], args[i + 2]);
