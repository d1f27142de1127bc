import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Integration files each use their own database and queue prefix, so they may run side by side.
    fileParallelism: true,
    maxWorkers: 2,
  },
});
