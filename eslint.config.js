// Lint rules (npm run lint, run by .ci/run before the tests): promises nobody awaits or hands
// on, and code nobody uses. Formatting is not linted here. The type-aware rules read the
// project's tsconfig.json (parserOptions.projectService).
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', 'out/**', '**/*.js', '**/*.cjs', '**/*.mjs'] },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: { allowDefaultProject: ['vitest.config.ts'] }, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // A promise is awaited, returned, handed on, or marked `void` (fire and forget on purpose).
      '@typescript-eslint/no-floating-promises': 'error',
      // Unused code: imports, variables, parameters after the last used one, private members,
      // expressions without effect, statements after return/throw.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { args: 'after-used', argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
      'no-unused-private-class-members': 'error',
      '@typescript-eslint/no-unused-expressions': 'error',
      'no-unreachable': 'error',
    },
  },
);
