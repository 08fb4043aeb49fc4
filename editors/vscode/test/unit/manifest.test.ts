// The extension manifest and the files it points at: language contribution,
// language configuration, grammar, packaging fields.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { SERVER_SETTINGS } from '../../src/settings';

const root = join(__dirname, '..', '..', '..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const json = (file: string) => JSON.parse(readFileSync(join(root, file), 'utf8'));

describe('manifest', () => {
  it('contributes the op2 language with its configuration and grammar', () => {
    const [language] = manifest.contributes.languages;
    assert.equal(language.id, 'op2');
    assert.deepEqual(language.extensions, ['.op2']);
    const [grammar] = manifest.contributes.grammars;
    assert.equal(grammar.language, 'op2');
    const tm = json(grammar.path);
    assert.equal(tm.scopeName, grammar.scopeName);
    assert.equal(tm.scopeName, 'source.op2', 'the scope tree-sitter.json declares');
    assert.ok(existsSync(join(root, language.configuration)));
    assert.ok(manifest.activationEvents.includes('onLanguage:op2'));
  });

  it('lets inlay hints run to their end in op2 files (VS Code cuts them at 43 characters)', () => {
    // Pin hints such as `⇐ dat_p_res_inc_recv_pecell_1` on the RW and INC
    // arguments late in a par_loop would otherwise lose their names.
    assert.equal(manifest.contributes.configurationDefaults['[op2]']['editor.inlayHints.maximumLength'], 0);
  });

  it('has a language configuration whose comments, brackets and regexes work', () => {
    const config = json('language-configuration.json');
    assert.equal(config.comments.lineComment, '//');
    assert.deepEqual(config.comments.blockComment, ['/*', '*/']);
    assert.deepEqual(config.brackets, [['{', '}'], ['[', ']'], ['(', ')']]);
    const closing = config.autoClosingPairs.map((p: { open: string; close: string }) => p.open + p.close);
    assert.deepEqual(closing, ['{}', '[]', '()', '""', '/* */']);
    const rules = config.indentationRules;
    const increase = new RegExp(rules.increaseIndentPattern);
    const decrease = new RegExp(rules.decreaseIndentPattern);
    const next = new RegExp(rules.indentNextLinePattern);
    assert.ok(increase.test('kernel k(const double *x) {'));
    assert.ok(increase.test('main {'));
    assert.ok(increase.test('    par_loop k over cells ('));
    assert.ok(!increase.test('    x = {0, 1};'));
    assert.ok(!increase.test('// a { in a comment'));
    assert.ok(decrease.test('}'));
    assert.ok(decrease.test('    );'));
    assert.ok(!decrease.test('    x = 1;'));
    assert.ok(next.test('    if (a > 0)'));
    assert.ok(!next.test('    if (a > 0) b = 1;'));
    assert.ok(!next.test('    for (;;) {'));
    const word = new RegExp(config.wordPattern);
    assert.equal(word.exec('  p_q[pcell[0]]')?.[0], 'p_q');
    for (const rule of config.onEnterRules) {
      new RegExp(rule.beforeText);
      if (rule.afterText) new RegExp(rule.afterText);
    }
  });

  it('lets no workspace choose the binary the extension runs (workspace trust)', () => {
    // A repository's .vscode/settings.json must not set op2.server.path:
    // `machine` scope keeps it to user and remote settings, and Restricted
    // Mode ignores it in a workspace too.
    const properties = manifest.contributes.configuration.properties;
    assert.equal(properties['op2.server.path'].scope, 'machine');
    const untrusted = manifest.capabilities?.untrustedWorkspaces;
    assert.equal(untrusted?.supported, 'limited');
    assert.match(untrusted.description, /op2\.server\.path/);
    assert.deepEqual(untrusted.restrictedConfigurations, ['op2.server.path']);
    assert.equal(manifest.capabilities.virtualWorkspaces, false);
    // Every other setting is the server's (sent to it as data, which it
    // treats as untrusted); a new setting the extension itself reads must
    // be added here, with a scope chosen for it.
    const server = new Set(SERVER_SETTINGS.map((s) => s.key));
    for (const key of Object.keys(properties)) {
      assert.ok(key === 'op2.server.path' || server.has(key), `${key}: a client setting without a trust decision`);
    }
  });

  it('is packageable: main, engines and the client library agree', () => {
    assert.equal(manifest.main, './dist/extension.js');
    assert.ok(manifest.publisher);
    const client = json('node_modules/vscode-languageclient/package.json');
    const need = /\^?(\d+)\.(\d+)/.exec(client.engines.vscode)!;
    const have = /\^?(\d+)\.(\d+)/.exec(manifest.engines.vscode)!;
    assert.ok(Number(have[1]) > Number(need[1]) || (have[1] === need[1] && Number(have[2]) >= Number(need[2])), `engines.vscode ${manifest.engines.vscode} below ${client.engines.vscode}`);
    const types = json('node_modules/@types/vscode/package.json');
    assert.ok(manifest.engines.vscode.endsWith(types.version), '@types/vscode must match the lowest supported VS Code');
    // Everything is left out of the .vsix but what is listed.
    const ignore = readFileSync(join(root, '.vscodeignore'), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '' && !l.startsWith('#'));
    assert.equal(ignore[0], '**');
    const kept = ignore.slice(1).map((l) => l.replace(/^!/, ''));
    for (const file of [manifest.main.replace(/^\.\//, ''), 'package.json', 'README.md', 'LICENSE', 'language-configuration.json', manifest.contributes.grammars[0].path.replace(/^\.\//, '')]) {
      assert.ok(kept.includes(file), `.vscodeignore keeps ${file}`);
    }
  });
});
