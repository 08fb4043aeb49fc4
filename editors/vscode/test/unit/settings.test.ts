// Settings: the section sent to the server, and package.json generated from
// server/lsp/src/config.rs (fails when package.json is stale).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { SERVER_SETTINGS, serverSection } from '../../src/settings';
// Bundled into the test by esbuild; the script's main() does not run.
import { CLIENT_SETTINGS, configuration, parseSchema } from '../../scripts/settings.mjs';

const root = join(__dirname, '..', '..', '..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

describe('settings', () => {
  it('package.json and src/generated/settings.ts match Settings::schema() (npm run settings)', () => {
    execFileSync(process.execPath, [join(root, 'scripts', 'settings.mjs'), '--check'], { stdio: 'pipe' });
  });

  it('package.json offers every server setting with the server default', () => {
    const properties = manifest.contributes.configuration.properties;
    const schema = parseSchema(readFileSync(join(root, '..', '..', 'server', 'lsp', 'src', 'config.rs'), 'utf8'));
    assert.deepEqual(
      Object.keys(properties).filter((k) => !(k in CLIENT_SETTINGS)),
      schema.map((s: { key: string }) => s.key),
    );
    for (const setting of schema) {
      assert.deepEqual(properties[setting.key].default, setting.default, setting.key);
      assert.equal(properties[setting.key].type, setting.kind, setting.key);
    }
    assert.deepEqual(properties['op2.trace.server'].enum, ['off', 'messages', 'verbose']);
    assert.ok('op2.server.path' in properties);
  });

  it('reads every kind of Rust string literal', () => {
    const source = `
      impl Settings {
        pub fn schema() -> Vec<SettingDescription> {
          vec![
            SettingDescription {
              key: "op2.a.b",
              kind: "string",
              default: "\\"x{y}\\"",
              description: "Line one, \\
                 continued; a \\"quote\\" and a tab\\t.",
              values: &["p", "q"],
            },
            SettingDescription { key: "op2.c", kind: "boolean", default: "false", description: r#"Raw "text" {"#, values: &[] },
          ]
        }
      }`;
    const parsed = parseSchema(source);
    assert.deepEqual(parsed, [
      { key: 'op2.a.b', kind: 'string', default: 'x{y}', description: 'Line one, continued; a "quote" and a tab\t.', values: ['p', 'q'] },
      { key: 'op2.c', kind: 'boolean', default: false, description: 'Raw "text" {', values: [] },
    ]);
    const config = configuration(parsed);
    assert.deepEqual(config.properties['op2.a.b'].enum, ['p', 'q']);
    assert.throws(() => parseSchema('fn other() {}'), /schema/);
    assert.throws(() => parseSchema('pub fn schema() { vec![SettingDescription { key: "op2.x", kind: "string", default: "nope", description: "", values: &[] }] }'), /not JSON/);
  });

  it('sends the server section nested by dots, with defaults', () => {
    const defaults = serverSection((_key, def) => def);
    assert.deepEqual(defaults, {
      build: { onSave: true, outDir: '', instance: '' },
      inlayHints: { invocationNames: true, generatedPins: true },
      trace: { server: 'off' },
    });
    assert.equal(SERVER_SETTINGS.length, 6);
  });

  it('sends user values, but a value of the wrong type falls back to the default', () => {
    const values: Record<string, unknown> = { 'build.onSave': false, 'build.outDir': 'out', 'inlayHints.generatedPins': 'yes', 'trace.server': null };
    const section = serverSection((key, def) => (key in values ? values[key] : def));
    assert.deepEqual(section, {
      build: { onSave: false, outDir: 'out', instance: '' },
      inlayHints: { invocationNames: true, generatedPins: true },
      trace: { server: 'off' },
    });
  });

  it('never sends client-only settings to the server', () => {
    const section = serverSection((key, def) => (key === 'server.path' ? '/x' : def));
    assert.equal('server' in section, false);
  });
});
