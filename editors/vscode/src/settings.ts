// The `op2` settings section as the server reads it: initialization options
// and `workspace/didChangeConfiguration`. Only the server's own keys are
// sent (the server rejects unknown keys), nested by their dots:
// `op2.build.onSave` becomes `{ build: { onSave: … } }`.

import { SERVER_SETTINGS } from './generated/settings';

export { SERVER_SETTINGS };

/** Reads one setting by its key without the `op2.` prefix (`build.onSave`). */
export type SettingGetter = (key: string, defaultValue: unknown) => unknown;

function sameType(value: unknown, defaultValue: unknown): boolean {
  return typeof value === typeof defaultValue && value !== null;
}

export function serverSection(get: SettingGetter): Record<string, unknown> {
  const section: Record<string, unknown> = {};
  for (const setting of SERVER_SETTINGS) {
    const parts = setting.key.split('.').slice(1);
    const leaf = parts.pop();
    if (leaf === undefined) continue;
    let node = section;
    for (const part of parts) {
      if (typeof node[part] !== 'object' || node[part] === null) node[part] = {};
      node = node[part] as Record<string, unknown>;
    }
    const value = get(setting.key.slice('op2.'.length), setting.default);
    // A value of the wrong type (a hand-edited settings.json) would make the
    // server reject the whole section; the default is the better answer.
    node[leaf] = sameType(value, setting.default) ? value : setting.default;
  }
  return section;
}
