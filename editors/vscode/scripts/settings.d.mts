// Types of scripts/settings.mjs, for the tests that import it.
export interface ParsedSetting {
  key: string;
  kind: string;
  default: unknown;
  description: string;
  values: string[];
}
export const CLIENT_SETTINGS: Record<string, Record<string, unknown>>;
export function parseSchema(source: string): ParsedSetting[];
export function configuration(settings: ParsedSetting[]): { title: string; properties: Record<string, any> };
export function generatedModule(settings: ParsedSetting[]): string;
export function paths(extensionDir: string): { repoRoot: string; configRs: string; packageJson: string; generatedTs: string };
