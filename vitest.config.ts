import { configDefaults, defineConfig } from 'vitest/config';

/** Files whose figures are timings under load of their own: each runs alone, after the rest (see `projects`). */
const ALONE = ['test/creation/fair-share.test.ts'];

export default defineConfig({
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    // Safety nets, not pass criteria: a test that waits does so on a condition, and a loaded machine (CI with
    // other work on its 2 cores) may take several times longer than an idle one.
    testTimeout: 180_000,
    hookTimeout: 240_000,
    pool: 'forks',
    // Integration files each use their own database and queue prefix, so they may run side by side.
    fileParallelism: true,
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: 'suite',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...ALONE],
          sequence: { groupOrder: 0 },
        },
      },
      {
        // What the fair share promises is a start within 2 s while one organisation floods: measured with no
        // other test file loading the same 2 cores and database.
        extends: true,
        test: { name: 'alone', include: ALONE, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
