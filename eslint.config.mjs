// typescript-eslint's recommended type-checked rules over everything TypeScript here, with a few
// choices of this codebase said below (npm run lint). Prettier owns the layout; the import graph's
// rules are dependency-cruiser's (.dependency-cruiser.cjs).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'ui-dist/**',
      'data/**',
      '.bench/**',
      'packages/*/dist/**',
      'migrations/**',
      'migrations-pg/**',
      'packages/client/src/api-types.ts',
      '**/*.mjs',
      '**/*.cjs',
      'drizzle*.config.ts',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // `_name` says "deliberately unused" (a destructured field left out, a required parameter).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // An async function here may have nothing to await: it implements an async contract (a
      // Fastify plugin, the SqlClient over the synchronous SQLite driver, the local scheduler).
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // What drives the service from outside (tests, scripts, benchmarks, the console) reads its JSON answers
    // untyped, as a client would: `any` there is the wire, not a hole in the service's types.
    files: ['test/**', '**/*.test.ts', 'scripts/**', 'bench/**', 'ui/**'],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // expect(fn).toThrow(), vi.spyOn(obj.method): a method named, not called.
      '@typescript-eslint/unbound-method': 'off',
    },
  },
);
