#!/usr/bin/env node
// Bundles the extension with esbuild.
//
//   node scripts/build.mjs               dist/extension.js (with source map)
//   node scripts/build.mjs --production  dist/extension.js, minified (what the .vsix holds)
//   node scripts/build.mjs --tests       out/test/**/*.test.js for node --test
//
// `vscode` is provided by the editor and stays external. In the unit tests
// vscode-languageclient stays external too, so that test/unit/mock/register.cjs
// can replace both with mocks.

import { build } from 'esbuild';
import { readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const production = process.argv.includes('--production');
const tests = process.argv.includes('--tests');

const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node18',
  logLevel: 'warning',
  absWorkingDir: root,
};

if (tests) {
  rmSync(join(root, 'out'), { recursive: true, force: true });
  const entries = [];
  for (const dir of ['unit', 'e2e']) {
    for (const file of readdirSync(join(root, 'test', dir))) {
      if (file.endsWith('.test.ts')) entries.push(`test/${dir}/${file}`);
    }
  }
  await build({
    ...common,
    entryPoints: entries,
    outdir: 'out/test',
    outbase: 'test',
    sourcemap: 'inline',
    // scripts/settings.mjs reads import.meta only when run as a script.
    logOverride: { 'empty-import-meta': 'silent' },
    external: ['vscode', 'vscode-languageclient', 'vscode-languageclient/*', 'vscode-languageserver-protocol', 'vscode-languageserver-protocol/*'],
  });
} else {
  rmSync(join(root, 'dist'), { recursive: true, force: true });
  await build({
    ...common,
    entryPoints: ['src/extension.ts'],
    outfile: 'dist/extension.js',
    external: ['vscode'],
    minify: production,
    sourcemap: production ? false : 'linked',
    metafile: false,
  });
}
