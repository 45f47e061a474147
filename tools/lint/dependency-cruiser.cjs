// Import cycles between files, type-only imports included (docs/decisions.md, "Lint: type-only
// import cycles"): `import type` is erased at run time, but a cycle through it still ties the two
// files into one unit that cannot be understood, moved or tested apart. import-x/no-cycle skips
// type-only imports and has no option to count them; dependency-cruiser's
// tsPreCompilationDeps reads the graph before TypeScript erases them. Run by tools/lint/src/lint.ts.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycle',
      comment: 'A file imports (perhaps through others, perhaps only types) a file that imports it back.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    // Keep `import type` and type-only specifiers in the graph (the point of this check).
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tools/lint/tsconfig.lint.json' },
    // Workspace packages are reached through node_modules symlinks and resolve to their real
    // folders, so a cycle across packages shows up as one across files; third-party code is a leaf.
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist-types|\\.data)/|^packages/contracts/src/gen/' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.json'] },
    includeOnly: '^(packages|services|tools|scripts|tests|bench|examples)/|^[^/]+\\.ts$',
  },
};
