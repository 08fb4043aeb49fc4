// What the status item says: the server's state and the last build, which
// the server reports as a `window/logMessage` starting with "op2 build".

export type ServerState = 'starting' | 'running' | 'stopped' | 'missing';

export interface BuildReport {
  ok: boolean;
  /** The first line, without the "op2 build: " prefix. */
  summary: string;
  /** The whole message. */
  detail: string;
  at: Date;
}

/** Message types of `window/logMessage` (LSP MessageType). */
export const MessageType = { Error: 1, Warning: 2, Info: 3, Log: 4 } as const;

/** A build report, if this log message is one. */
export function parseBuildMessage(type: number, message: string, at: Date = new Date()): BuildReport | undefined {
  const match = /^op2 build(?: failed)?:\s*/.exec(message);
  if (!match) return undefined;
  const firstLine = message.split('\n', 1)[0] ?? '';
  const summary = message.startsWith('op2 build failed') ? firstLine.replace(/^op2 build /, '') : firstLine.slice(match[0].length);
  return { ok: type === MessageType.Info || type === MessageType.Log, summary, detail: message, at };
}

function clock(at: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}`;
}

export interface StatusView {
  text: string;
  detail: string;
  severity: 'information' | 'warning' | 'error';
  busy: boolean;
}

export function statusView(state: ServerState, build: BuildReport | undefined, serverPath: string | undefined): StatusView {
  const stateText = {
    starting: '$(sync~spin) op2 starting',
    running: build && !build.ok ? '$(warning) op2' : '$(check) op2',
    stopped: '$(circle-slash) op2 stopped',
    missing: '$(error) op2 not found',
  }[state];
  const details: string[] = [];
  if (build) details.push(`last build ${clock(build.at)}: ${build.ok ? '' : 'failed: '}${build.summary}`);
  else if (state === 'running') details.push('no build yet');
  if (serverPath) details.push(serverPath);
  const severity = state === 'missing' || state === 'stopped' ? 'error' : build && !build.ok ? 'warning' : 'information';
  return { text: stateText, detail: details.join(' · '), severity, busy: state === 'starting' };
}
