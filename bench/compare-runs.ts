/**
 * The figures `npm run bench:compare` puts side by side: every run in a scenario's result that reports accounts/s
 * and CPU per account (creation-throughput's sizes, the history sweep's points, scheduled), per version and round.
 */

export type RunFigures = {
  /** Where in the result the run is, e.g. `realistic_1000` or `history_sweep.months_42` ('' for the result itself). */
  path: string;
  accountsPerS: number;
  /** Database + web + worker + Redis, ms per account. */
  serviceCpuMs: number;
  cpuMs: Record<string, number>;
  /** Database commands per account, when the run counted them. */
  databaseCommands: number | null;
};

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const SERVICE = ['database', 'web', 'worker', 'redis'] as const;

/** Every run of a result, depth first. */
export function runsOf(result: unknown, path = ''): RunFigures[] {
  if (!isObject(result)) return [];
  const runs: RunFigures[] = [];
  const cpu = result.cpu_ms_per_account;
  if (typeof result.accounts_per_s === 'number' && isObject(cpu)) {
    const cpuMs = Object.fromEntries(
      Object.entries(cpu).filter((e): e is [string, number] => typeof e[1] === 'number'),
    );
    const commands = result.commands_per_account;
    const database = isObject(commands) && isObject(commands.database) ? commands.database.total : null;
    runs.push({
      path,
      accountsPerS: result.accounts_per_s,
      serviceCpuMs: round2(SERVICE.reduce((sum, k) => sum + (cpuMs[k] ?? 0), 0)),
      cpuMs,
      databaseCommands: typeof database === 'number' ? database : null,
    });
  }
  for (const [key, value] of Object.entries(result))
    if (isObject(value)) runs.push(...runsOf(value, path ? `${path}.${key}` : key));
  return runs;
}

export type Measured = { label: string; round: number; runs: RunFigures[] };

export type Comparison = {
  path: string;
  versions: {
    label: string;
    accountsPerS: number[];
    serviceCpuMs: number[];
    meanAccountsPerS: number;
    meanServiceCpuMs: number;
    /** Means over the first version's (1 for the first). */
    throughputRatio: number;
    cpuRatio: number;
  }[];
};

/** Per run path, each version's figures in round order and their means against the first version's. */
export function compare(measured: readonly Measured[], labels: readonly string[]): Comparison[] {
  const paths = [...new Set(measured.flatMap((m) => m.runs.map((r) => r.path)))];
  return paths.map((path) => {
    const versions = labels.map((label) => {
      const runs = measured
        .filter((m) => m.label === label)
        .sort((a, b) => a.round - b.round)
        .flatMap((m) => m.runs.filter((r) => r.path === path));
      const accountsPerS = runs.map((r) => r.accountsPerS);
      const serviceCpuMs = runs.map((r) => r.serviceCpuMs);
      return {
        label,
        accountsPerS,
        serviceCpuMs,
        meanAccountsPerS: mean(accountsPerS),
        meanServiceCpuMs: mean(serviceCpuMs),
      };
    });
    const first = versions[0];
    return {
      path,
      versions: versions.map((v) => ({
        ...v,
        throughputRatio: round2(v.meanAccountsPerS / (first?.meanAccountsPerS ?? NaN)),
        cpuRatio: round2(v.meanServiceCpuMs / (first?.meanServiceCpuMs ?? NaN)),
      })),
    };
  });
}

function mean(values: readonly number[]): number {
  return values.length === 0 ? NaN : round2(values.reduce((a, b) => a + b, 0) / values.length);
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}

/** The order of the versions in a round: as given in odd rounds, reversed in even ones (ABBA). */
export function orderOf<T>(versions: readonly T[], round: number): T[] {
  return round % 2 === 1 ? [...versions] : [...versions].reverse();
}
