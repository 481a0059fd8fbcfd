#!/usr/bin/env python3
"""batch_timeline.py LOG... - where the time of a `leuktrack --jobs K` run goes.

Each LOG is the stderr of one `leuktrack -v -v --jobs K -o DIR/ ...` run over
300-frame videos, with a line `LAUNCH <epoch s>` before it and `END <epoch s>`
after it (e.g. `echo "LAUNCH $(date +%s.%N)" >log; leuktrack ... 2>>log;
echo "END $(date +%s.%N)" >>log`). -v -v stamps each step with the ms since
main's start: the driver's probe and primary context, and per video its input
taken and opened, its context ready, its first and last frame, its end.
Prints the start (launch to the first kernels), a slot's turnover (last frame
to the next video's first), the tail (fewer than K tracking) and the exit.
Standard library only (docs/PERFORMANCE.md, many videos, branch leuktail).
"""
import re
import sys

FRAMES = 300  # frames per video (bench_batch.sh's clips)


def parse(fn):
    lines = open(fn).read().splitlines()
    launch = end = None
    glob, vids = {}, {}
    for line in lines:
        if line.startswith('LAUNCH '):
            launch = float(line.split()[1])
        elif line.startswith('END '):
            end = float(line.split()[1])
        m = re.match(r'leuktrack: (?:(\S+): )?(?:debug: )?(.*)', line)
        t = re.search(r'\+([\d.]+) ms', line)
        if not m or not t:
            continue
        tag, msg, t = m.group(1), m.group(2), float(t.group(1))
        if tag == 'debug' or 'driver probed' in msg or 'context on device' in msg:
            if 'driver probed' in msg:
                glob['probe'] = t
            elif 'context on device' in msg:
                glob.setdefault('context', t)  # the primary context: the first such line
            continue
        v = vids.setdefault(tag, {})
        for key, pat in (('taken', 'taken at'), ('opened', 'input opened'), ('ready', 'set up in'),
                         ('first', 'first frame done'), ('last', 'last frame done'), ('end', 'ended at')):
            if pat in msg:
                v[key] = t
        if 'set up in' in msg:
            v['setup'] = float(re.search(r'set up in ([\d.]+) ms', msg).group(1))
    if launch is None or end is None:
        sys.exit('%s: no LAUNCH/END lines' % fn)
    vs = sorted((v for v in vids.values() if 'taken' in v and 'end' in v and 'last' in v), key=lambda v: v['taken'])
    if not vs:
        sys.exit('%s: no stamped videos (run leuktrack with -v -v)' % fn)
    return launch, end, glob, vs


def idle(vs, k, lo_key, hi_key, split):
    """Slot-ms with fewer than k videos between lo_key and hi_key, before and after time split."""
    pts = sorted([(v[lo_key], 1) for v in vs] + [(v[hi_key], -1) for v in vs])
    start = min(v[lo_key] for v in vs)
    n, prev, before, after, short = 0, pts[0][0], 0.0, 0.0, {k: 0.0, 8: 0.0, 4: 0.0}
    for t, d in pts:
        dt = t - prev
        if prev >= split:
            after += (k - n) * dt
            for th in short:
                short[th] += dt if n < th else 0.0
        elif prev >= start:
            before += (k - n) * dt
        n += d
        prev = t
    return before, after, short


def mean(x):
    x = list(x)
    return sum(x) / len(x)


def report(fn):
    launch, end, g, vs = parse(fn)
    wall, n = end - launch, len(vs)
    k = max(1, sum(1 for v in vs if v['taken'] < min(w['end'] for w in vs)))
    print('== %s: %d videos, %d at once, wall %.3f s, %.0f frames/s' % (fn, n, k, wall, FRAMES * n / wall))
    w1 = vs[:k]
    print('  start: driver probed +%.0f ms, primary context +%.0f; first wave set up %.1f ms mean (max %.1f), '
          'contexts ready +%.0f..%.0f, first frames done +%.0f..%.0f' % (
              g.get('probe', -1), g.get('context', -1), mean(v['setup'] for v in w1), max(v['setup'] for v in w1),
              min(v['ready'] for v in w1), max(v['ready'] for v in w1), min(v['first'] for v in w1),
              max(v['first'] for v in w1)))
    later = vs[k:]
    if later:
        print('  turnover: last frame -> ended %.1f ms mean (max %.1f); taken -> first frame %.1f mean (max %.1f: '
              'opened %.1f, context %.1f, first frame %.1f)' % (
                  mean(v['end'] - v['last'] for v in vs), max(v['end'] - v['last'] for v in vs),
                  mean(v['first'] - v['taken'] for v in later), max(v['first'] - v['taken'] for v in later),
                  mean(v['opened'] - v['taken'] for v in later), mean(v['ready'] - v['opened'] for v in later),
                  mean(v['first'] - v['ready'] for v in later)))
    last_taken = vs[-1]['taken']
    before, after, short = idle(vs, k, 'first', 'last', last_taken)
    t_last = max(v['last'] for v in vs)
    print('  tracking (first..last frame): %.1f ms a video (%.0f frames/s each); idle slot-ms before the last '
          'input was taken %.0f (/%d = %.1f ms), after %.0f (/%d = %.1f ms); after it fewer than %d tracking '
          'for %.0f ms, < 8 %.0f, < 4 %.0f' % (
              mean(v['last'] - v['first'] for v in vs), (FRAMES - 1) / mean(v['last'] - v['first'] for v in vs) * 1e3,
              before, k, before / k, after, k, after / k, k, short[k], short[8], short[4]))
    print('  end: last frame of all +%.0f ms, last video ended +%.0f, process end +%.0f' % (
        t_last, max(v['end'] for v in vs), 1e3 * wall))


if __name__ == '__main__':
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for f in sys.argv[1:]:
        report(f)
