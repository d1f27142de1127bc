import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** A pattern refusing imports from the source folders named in `above` (a layer above the importing file). */
const above = (folders) => ({
  regex: `^(\\.\\./)+(${folders.join('|')})/`,
  message: 'Layers depend downward: this module may not import from a layer above it.',
});

/** Only src/storage/ reaches the mongoose models: everything else goes through the storage object. */
const models = {
  regex: '(^|/)storage/models/',
  message: 'Only src/storage/ imports the models: use the storage object (src/storage/index.ts).',
};

/** Files under `files` (less `ignores`) may not import what `patterns` refuse. */
function restrict(files, patterns, ignores = []) {
  return { files, ignores, rules: { 'no-restricted-imports': ['error', { patterns }] } };
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
  // Layers depend downward: the programs (src/api, src/workers, src/cli) on top; then the use cases
  // (src/use-cases); then storage (which alone holds the models); then domain, schemas, the job catalogue, the
  // infrastructure and the vocabulary. An import that runs back up is an error; a loop between folders that these
  // layers leave open (domain and schemas, say) is refused by `npm run circular:folders`.
  restrict(['src/**/*.ts'], [models], ['src/storage/**']),
  restrict(['src/use-cases/**'], [models, above(['api', 'workers', 'cli'])]),
  restrict(
    ['src/domain/**', 'src/jobs/**', 'src/infra/**', 'src/schemas/**', 'src/vocabulary/**'],
    [models, above(['api', 'workers', 'cli', 'use-cases', 'storage'])],
  ),
  restrict(['src/storage/**'], [above(['api', 'workers', 'cli', 'use-cases'])]),
  {
    // Tests read JSON bodies freely; production code stays strict.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The cohort page's script (ES modules) runs in the browser: the browser globals it uses (and Chart.js, which
    // its own script sets), declared here rather than through a package the project lacks.
    files: ['src/api/pages/*.client.js'],
    languageOptions: {
      globals: Object.fromEntries(
        'document sessionStorage atob CSS fetch location history Blob URL setTimeout clearTimeout Chart'
          .split(' ')
          .map((name) => [name, 'readonly']),
      ),
    },
  },
  {
    // The page's declarations are type-checked by `tsc -p tsconfig.pages.json` (with the DOM), outside the
    // server's project that type-aware lint reads: linted without types.
    files: ['src/api/pages/*.d.ts'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { parserOptions: { projectService: false, project: null } },
  },
);
