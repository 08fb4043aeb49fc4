#!/usr/bin/env node
// Tests the TextMate grammar (syntaxes/op2.tmLanguage.json):
//
//  1. vscode-tmgrammar-test on test/grammar/*.op2: hand-written files whose
//     `// ^^^ scope` lines assert the scopes of the line above;
//  2. vscode-tmgrammar-snap on every example program (docs/examples/*.op2):
//     the scopes of every token must equal test/snapshots/<name>.op2.snap;
//  3. invariants on the examples and the ```op2 blocks of docs/language.md:
//     no `invalid` scope, every reserved word of the tree-sitter grammar is
//     coloured as a keyword, type or constant, and comments are comments.
//
//   node scripts/grammar-test.mjs            run all three
//   node scripts/grammar-test.mjs --update   rewrite the snapshots (check the diff!)

import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const repo = join(root, '..', '..');
const grammarFile = join(root, 'syntaxes', 'op2.tmLanguage.json');
const snapshots = join(root, 'test', 'snapshots');
const examples = join(repo, 'docs', 'examples');
const update = process.argv.includes('--update');
const tool = (name) => join(root, 'node_modules', 'vscode-tmgrammar-test', 'dist', name);

let failed = false;
const fail = (message) => {
  failed = true;
  console.error(`FAIL ${message}`);
};

function run(script, args) {
  const result = spawnSync(process.execPath, [tool(script), ...args], { cwd: root, encoding: 'utf8' });
  process.stdout.write(result.stdout);
  process.stderr.write(result.stderr);
  return result.status === 0;
}

// 1. Assertion files.
console.log('-- TextMate grammar: assertion tests (test/grammar/*.op2)');
if (!run('unit.js', ['--compact', '-g', grammarFile, 'test/grammar/*.op2'])) fail('vscode-tmgrammar-test assertions');

// 2. Snapshots of the examples.
console.log('-- TextMate grammar: snapshots of docs/examples/*.op2');
const programs = readdirSync(examples).filter((f) => f.endsWith('.op2')).sort();
if (programs.length === 0) fail('no example programs in docs/examples');
const work = mkdtempSync(join(tmpdir(), 'op2-tm-snap-'));
try {
  for (const program of programs) {
    copyFileSync(join(examples, program), join(work, program));
    const snap = join(snapshots, `${program}.snap`);
    if (existsSync(snap)) copyFileSync(snap, join(work, `${program}.snap`));
    else if (!update) fail(`no snapshot for docs/examples/${program}: run \`npm run test:grammar -- --update\` in editors/vscode and review it`);
  }
  const ok = run('snapshot.js', [...(update ? ['--updateSnapshot'] : []), '-s', 'source.op2', '-g', grammarFile, `${work}/*.op2`]);
  if (!ok) fail('snapshots differ: if the change is intended, run `npm run test:grammar -- --update` in editors/vscode and review the diff');
  if (update) {
    for (const program of programs) copyFileSync(join(work, `${program}.snap`), join(snapshots, `${program}.snap`));
    console.log(`updated ${programs.length} snapshots in test/snapshots/`);
  }
  for (const stale of readdirSync(snapshots).filter((f) => f.endsWith('.op2.snap'))) {
    if (!programs.includes(stale.replace(/\.snap$/, ''))) fail(`test/snapshots/${stale} has no example program any more; delete it`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

// 3. Invariants, with vscode-textmate itself (what VS Code runs).
console.log('-- TextMate grammar: invariants on the examples and docs/language.md');
const vsctm = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');
const wasm = readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
const registry = new vsctm.Registry({
  onigLib: Promise.resolve({
    createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
    createOnigString: (text) => new oniguruma.OnigString(text),
  }),
  loadGrammar: async (scope) => (scope === 'source.op2' ? vsctm.parseRawGrammar(readFileSync(grammarFile, 'utf8'), grammarFile) : null),
});
const grammar = await registry.loadGrammar('source.op2');

// The reserved words of the tree-sitter grammar (grammar/grammar.js).
const grammarJs = readFileSync(join(repo, 'grammar', 'grammar.js'), 'utf8');
const listOf = (name) => {
  const m = new RegExp(`const ${name} = \\[([^\\]]*)\\]`).exec(grammarJs);
  if (!m) throw new Error(`${name} not found in grammar/grammar.js`);
  return [...m[1].matchAll(/'([^']+)'/g)].map((x) => x[1]);
};
const reservedBlock = /reserved:\s*\{\s*global:[^[]*\[([\s\S]*?)\]\s*,?\s*\}/.exec(grammarJs);
if (!reservedBlock) throw new Error('the reserved words were not found in grammar/grammar.js');
const reserved = new Set([...[...reservedBlock[1].matchAll(/'([^']+)'/g)].map((x) => x[1]), ...listOf('ACCESS_MODES'), ...listOf('SCALAR_TYPES')]);
console.log(`${reserved.size} reserved words from grammar/grammar.js`);
const keywordScope = /^(keyword|storage|constant\.language|support\.function)\./;

const sources = programs.map((p) => [`docs/examples/${p}`, readFileSync(join(examples, p), 'utf8')]);
const languageMd = readFileSync(join(repo, 'docs', 'language.md'), 'utf8');
let block = 0;
for (const m of languageMd.matchAll(/^```op2[ \t]*\n([\s\S]*?)^```/gm)) sources.push([`docs/language.md op2 block ${++block}`, m[1]]);

let tokens = 0;
for (const [name, text] of sources) {
  let stack = vsctm.INITIAL;
  text.split('\n').forEach((line, index) => {
    const result = grammar.tokenizeLine(line, stack);
    stack = result.ruleStack;
    for (const token of result.tokens) {
      tokens += 1;
      const word = line.slice(token.startIndex, token.endIndex);
      const where = `${name}:${index + 1}:${token.startIndex + 1} \`${word}\``;
      const scopes = token.scopes.slice(1);
      if (scopes.some((s) => s.startsWith('invalid'))) fail(`${where} is scoped invalid: ${scopes.join(' ')}`);
      const inText = scopes.some((s) => s.startsWith('comment') || s.startsWith('string'));
      if (reserved.has(word) && !inText && !scopes.some((s) => keywordScope.test(s))) {
        fail(`${where} is a reserved word but is scoped ${scopes.join(' ') || '(nothing)'}`);
      }
      if (/^\s*\/\//.test(line) && token.startIndex >= line.indexOf('//') && !scopes.some((s) => s.startsWith('comment'))) {
        fail(`${where} is in a line comment but is scoped ${scopes.join(' ')}`);
      }
    }
  });
}
console.log(`${sources.length} programs, ${tokens} tokens checked`);

if (failed) {
  console.error('TextMate grammar tests failed');
  process.exit(1);
}
console.log('TextMate grammar tests passed');
