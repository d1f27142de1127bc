import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Safety nets, not pass criteria: a test that waits does so on a condition, and a loaded machine (CI with
    // other work on its 2 cores) may take several times longer than an idle one.
    testTimeout: 180_000,
    hookTimeout: 240_000,
    pool: 'forks',
    // Integration files each use their own database and queue prefix, so they may run side by side.
    fileParallelism: true,
    maxWorkers: 2,
  },
});
