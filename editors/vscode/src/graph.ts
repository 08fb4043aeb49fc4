// Where build on save writes the graph, mirroring the server's
// `handlers::build::output_path`: `<stem>.graph.xml` beside the source, or in
// `op2.build.outDir` relative to the workspace folder holding the source.

import * as path from 'node:path';

export function graphPath(source: string, outDir: string, workspaceFolder: string | undefined, api: path.PlatformPath = path): string {
  const parsed = api.parse(source);
  const fileName = `${parsed.name}.graph.xml`;
  if (outDir.trim() === '' || workspaceFolder === undefined) return api.join(parsed.dir, fileName);
  return api.normalize(api.join(workspaceFolder, outDir, fileName));
}

/** The URI of the read-only document showing a generated device type. */
export const DEVICE_TYPE_SCHEME = 'op2-device-type';
