import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Files under `files` may not import from the source folders named in `above`. */
function layer(files, above) {
  return {
    files,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: `^(\\.\\./)+(${above.join('|')})/`,
              message: 'Layers depend downward: this module may not import from a layer above it.',
            },
          ],
        },
      ],
    },
  };
}

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.tools/**', '.data/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  // Layers depend downward: routes (src/api) and the worker entry (src/workers) on top; then creation,
  // post-import, webhooks and the operator commands; then storage, domain, schemas, models, the job catalogue, the
  // infrastructure and the vocabulary. An import that runs back up is an error; a loop between folders that these
  // layers leave open (domain and schemas, say) is refused by `npm run circular:folders`.
  layer(
    ['src/creation/**', 'src/post-import/**', 'src/webhooks/**', 'src/admin/**', 'src/progress/**'],
    ['api', 'workers', 'cli'],
  ),
  layer(
    [
      'src/storage/**',
      'src/domain/**',
      'src/models/**',
      'src/jobs/**',
      'src/infra/**',
      'src/schemas/**',
      'src/vocabulary/**',
    ],
    ['api', 'workers', 'cli', 'client', 'creation', 'post-import', 'webhooks', 'admin', 'progress'],
  ),
  {
    // Tests read JSON bodies freely; production code stays strict.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
