import { describe, expect, it } from 'vitest';
import { commandLine, REDACTED } from '../../src/cli/client/command.js';
import { outcomes, type Outcome } from '../../src/cli/client/outcomes.js';
import { timeline, totals, type RunRecord } from '../../src/cli/client/run-history.js';

// What a report says about the command and the runs of a migration, computed without a service.

const counts = (some: Partial<Record<Outcome, number>>) =>
  Object.fromEntries(outcomes.map((o) => [o, some[o] ?? 0])) as Record<Outcome, number>;

function run(n: number, seconds: number, throughput: number[], extra: Partial<RunRecord> = {}): RunRecord {
  const sent = throughput.reduce((a, b) => a + b, 0);
  return {
    run: n,
    command: 'import-client migrate x.jsonl',
    started_at: `2026-01-0${n}T10:00:00.000Z`,
    finished_at: `2026-01-0${n}T11:00:00.000Z`,
    ended: 'completed',
    seconds,
    cpu_seconds: 1.5,
    lines: sent,
    skipped_done_earlier: 0,
    sent,
    by_outcome: counts({ created: sent }),
    accounts_per_s: 0,
    server_throttled: 2,
    throughput,
    ...extra,
  };
}

describe('the command line of a report', () => {
  const key = 'amk_2yKq9cW0pZr8Vh3nLd5TfB1xQe7sJm4uGa6oNi0RkYw';
  const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJvcmcifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ';

  it('keeps every argument given, quoted as a shell reads it back', () => {
    expect(
      commandLine('import-client', [
        'migrate',
        'cohort 1.jsonl',
        '--team',
        "Ops' Team",
        '--mode',
        'v2',
        '--report',
        '/tmp/r',
        '--dry-run',
        '--concurrency=4',
      ]),
    ).toBe(
      `import-client migrate 'cohort 1.jsonl' --team 'Ops'\\'' Team' --mode v2 --report /tmp/r --dry-run --concurrency=4`,
    );
    expect(commandLine('import-client', ['validate', ''])).toBe("import-client validate ''");
  });

  it('redacts the API key and tokens wherever they are, and the value of an option named as a secret', () => {
    const line = commandLine(
      'import-client',
      [
        'migrate',
        `/data/${key}.jsonl`,
        '--team',
        'Ops',
        '--token',
        'plain-secret-value',
        '--api-key=another-secret',
        `--report=/r/${jwt}`,
        'my-own-key-1234567',
      ],
      ['my-own-key-1234567', undefined, 'short'],
    );
    expect(line).toBe(
      `import-client migrate /data/${REDACTED}.jsonl --team Ops --token ${REDACTED} --api-key=${REDACTED} --report=/r/${REDACTED} ${REDACTED}`,
    );
    for (const secret of [key, jwt, 'plain-secret-value', 'another-secret', 'my-own-key'])
      expect(line).not.toContain(secret);
    // A short "secret" is not looked for as text: it would blank out ordinary words.
    expect(commandLine('import-client', ['migrate', 'short.jsonl'], ['short'])).toContain('short.jsonl');
    // After `--`, nothing is an option.
    expect(commandLine('import-client', ['migrate', '--', '--token'])).toBe(
      'import-client migrate -- --token',
    );
  });
});

describe('the runs of a migration', () => {
  it('totals: time, CPU, lines sent and their outcomes over every run; the rate over what was sent', () => {
    const first = run(
      1,
      60,
      Array.from({ length: 60 }, () => 5),
    );
    const resumed = run(
      2,
      20,
      Array.from({ length: 20 }, () => 10),
      {
        lines: 500,
        skipped_done_earlier: 300,
        by_outcome: counts({ created: 190, parse_error: 10 }),
      },
    );
    const total = totals([first, resumed]);
    expect(total).toMatchObject({
      runs: 2,
      started_at: first.started_at,
      finished_at: resumed.finished_at,
      seconds: 80,
      cpu_seconds: 3,
      sent: 500,
      server_throttled: 4,
    });
    expect(total.by_outcome).toEqual(counts({ created: 490, parse_error: 10 }));
    // 490 accounts (parse errors are no account) over 80 s: the 300 skipped lines count nowhere.
    expect(total.accounts_per_s).toBe(6.1);
  });

  it('the chart follows every run for as long as it ran: a resume that sent nothing is no bar at 0 s', () => {
    const first = run(1, 3.4, [4, 6, 5, 1]);
    const resumed = run(2, 2.2, [], { lines: 16, skipped_done_earlier: 16 });
    const { step, bars } = timeline([first, resumed]);
    expect(step).toBe(1);
    expect(bars).toEqual([
      { run: 1, at: '0 s', rate: 4 },
      { run: 1, at: '1 s', rate: 6 },
      { run: 1, at: '2 s', rate: 5 },
      { run: 1, at: '3 s', rate: 1 },
      { run: 2, at: '0 s', rate: 0 },
      { run: 2, at: '1 s', rate: 0 },
      { run: 2, at: '2 s', rate: 0 },
    ]);
  });

  it('long runs are drawn in wider bars, at most 600, each the mean rate over its seconds', () => {
    const hour = Array.from({ length: 3600 }, (_, s) => (s < 1800 ? 10 : 20));
    const { step, bars } = timeline([run(1, 3600, hour), run(2, 3600, hour)]);
    expect(step).toBe(12);
    expect(bars).toHaveLength(600);
    expect(bars[0]).toEqual({ run: 1, at: '0 s', rate: 10 });
    expect(bars[299]).toEqual({ run: 1, at: '59:48', rate: 20 });
    expect(bars[300]).toEqual({ run: 2, at: '0 s', rate: 10 });
    // A last bar shorter than the others is the mean over the seconds it has.
    const odd = timeline([run(1, 3601, [...hour, 7])]);
    expect(odd.step).toBe(7);
    // The last bar: seconds 3598 and 3599 (20 each) and 3600 (7).
    expect(odd.bars.at(-1)).toEqual({ run: 1, at: '59:58', rate: 15.67 });
  });
});
